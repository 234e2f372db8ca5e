#include "passwd_lookup.hpp"

#include <charconv>
#include <fstream>
#include <limits>

namespace tcptune::cli {

namespace {

std::optional<uid_t> parse_uid(const std::string& text) {
  unsigned long value = 0;
  const char* end = text.data() + text.size();
  const auto [at, error] = std::from_chars(text.data(), end, value);
  // (uid_t)-1 is "no uid" to the kernel's calls.
  if (text.empty() || error != std::errc() || at != end || value >= std::numeric_limits<uid_t>::max()) {
    return std::nullopt;
  }
  return static_cast<uid_t>(value);
}

}  // namespace

std::optional<PasswdEntry> find_user(const std::string& name_or_uid, const std::string& passwd_path) {
  const std::optional<uid_t> wanted_uid = parse_uid(name_or_uid);
  std::ifstream passwd(passwd_path);
  std::string line;
  // name:password:uid:gid:gecos:home:shell
  while (std::getline(passwd, line)) {
    const std::size_t name_end = line.find(':');
    const std::size_t password_end = name_end == std::string::npos ? name_end : line.find(':', name_end + 1);
    const std::size_t uid_end = password_end == std::string::npos ? password_end : line.find(':', password_end + 1);
    if (uid_end == std::string::npos) {
      continue;
    }
    const std::string name = line.substr(0, name_end);
    const std::optional<uid_t> uid = parse_uid(line.substr(password_end + 1, uid_end - password_end - 1));
    if (!uid.has_value()) {
      continue;
    }
    if (wanted_uid.has_value() ? *uid == *wanted_uid : name == name_or_uid) {
      return PasswdEntry{name, *uid};
    }
  }
  if (wanted_uid.has_value()) {
    return PasswdEntry{name_or_uid, *wanted_uid};
  }
  return std::nullopt;
}

}  // namespace tcptune::cli
