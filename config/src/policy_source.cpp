// Where a policy comes from: a file (read safely, bounded), TCPTUNE_POLICY_TOML, or the built-in
// default. The text goes to load_policy_text (policy_loader.cpp).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <optional>
#include <system_error>
#include <utility>

#include "tcptune/config/file_type.hpp"
#include "tcptune/config/policy_loader.hpp"

namespace tcptune::config {

namespace {

PolicyError file_error(const std::string& source, std::string message) {
  return PolicyError{SourcePos{source, 0, 0}, std::move(message)};
}

LoadResult failed(PolicyError error) {
  return LoadResult{std::variant<Policy, PolicyError>(std::in_place_index<1>, std::move(error))};
}

// `bytes` unset: read up to the bound without reaching the end (the file grew, or says st_size 0).
std::string too_large(std::optional<std::size_t> bytes) {
  static_assert(kMaxPolicyBytes == std::size_t{1} << 20, "the message says 1 MiB");
  return (bytes.has_value() ? std::to_string(*bytes) + " bytes, " : std::string()) +
         "more than the 1 MiB a policy may have";
}

// strerror's text without its buffer: the shim loads the policy inside the app, whose threads may use it.
std::string errno_text(int error) {
  return std::generic_category().message(error);
}

// Closes the descriptor on every path out of read_policy_file.
struct FdCloser {
  int fd;
  explicit FdCloser(int descriptor) : fd(descriptor) {}
  FdCloser(const FdCloser&) = delete;
  FdCloser& operator=(const FdCloser&) = delete;
  ~FdCloser() { (void)::close(fd); }
};

}  // namespace

std::variant<std::string, PolicyError> read_policy_file(const std::string& path) {
  // The stat first only spares a device the side effects of an open (a tape rewinds, a watchdog
  // arms); the fstat on the opened descriptor below is what decides, whatever was swapped in.
  struct stat before {};
  if (::stat(path.c_str(), &before) == 0 && !S_ISREG(before.st_mode)) {
    return file_error(path, not_a_regular_file(before.st_mode));
  }
  // O_NONBLOCK: opening a FIFO would wait for a writer, before the app's main. O_NOCTTY: a
  // terminal named here must not become a daemon's controlling terminal.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) {
    return file_error(path, "cannot read: " + errno_text(errno));
  }
  const FdCloser closer{fd};
  struct stat info {};
  if (::fstat(fd, &info) != 0) {
    return file_error(path, "cannot read: " + errno_text(errno));
  }
  if (!S_ISREG(info.st_mode)) {
    return file_error(path, not_a_regular_file(info.st_mode));
  }
  if (static_cast<std::uint64_t>(info.st_size) > kMaxPolicyBytes) {
    return file_error(path, too_large(static_cast<std::size_t>(info.st_size)));
  }
  // Read to the end rather than st_size bytes (a /proc file says 0, a file may grow meanwhile),
  // but never past the bound: one byte more than it is enough to know the file is too large.
  // The buffer starts at the size the file says and grows as it must: one of the bound's size,
  // zeroed, cost every process 256 page faults for a policy of a few lines.
  constexpr std::size_t kLimit = kMaxPolicyBytes + 1;
  std::string text(std::min<std::size_t>(static_cast<std::size_t>(info.st_size) + 1, kLimit), '\0');
  std::size_t length = 0;
  while (length < kLimit) {
    if (length == text.size()) {
      text.resize(std::min<std::size_t>(std::max<std::size_t>(text.size() * 2, 4096), kLimit));
    }
    const ssize_t got = ::read(fd, text.data() + length, text.size() - length);
    if (got < 0 && errno == EINTR) {
      continue;
    }
    if (got < 0) {
      return file_error(path, "cannot read: " + errno_text(errno));
    }
    if (got == 0) {
      break;
    }
    length += static_cast<std::size_t>(got);
  }
  if (length > kMaxPolicyBytes) {
    return file_error(path, too_large(std::nullopt));
  }
  text.resize(length);
  return text;
}

LoadResult load_policy_file(const std::string& path) {
  std::variant<std::string, PolicyError> read = read_policy_file(path);
  if (read.index() == 1) {
    return failed(std::get<1>(std::move(read)));
  }
  return load_policy_text(std::get<0>(read), path);
}

PolicySource discover_policy_source(bool secure_execution, const char* system_path) {
  if (!secure_execution) {
    const char* name = std::getenv("TCPTUNE_POLICY_NAME");
    if (const char* path = std::getenv("TCPTUNE_POLICY"); path != nullptr && *path != '\0') {
      return {PolicySource::Kind::env_path, path, name != nullptr ? name : ""};
    }
    if (const char* inline_text = std::getenv("TCPTUNE_POLICY_TOML"); inline_text != nullptr && *inline_text != '\0') {
      return {PolicySource::Kind::env_inline, inline_text, name != nullptr ? name : ""};
    }
  }
  // Whether it is there and readable, without opening it: opening a FIFO would block.
  if (system_path != nullptr && ::faccessat(AT_FDCWD, system_path, R_OK, AT_EACCESS) == 0) {
    return {PolicySource::Kind::system_file, system_path, {}};
  }
  return {PolicySource::Kind::builtin, {}, {}};
}

std::variant<PolicyText, PolicyError> read_discovered(const PolicySource& source) {
  using Result = std::variant<PolicyText, PolicyError>;
  switch (source.kind) {
    case PolicySource::Kind::system_file:
    case PolicySource::Kind::env_path: {
      // An error reading names the file read; one in the text names the policy by its name.
      std::variant<std::string, PolicyError> read = read_policy_file(source.path_or_text);
      if (read.index() == 1) {
        return Result(std::in_place_index<1>, std::get<1>(std::move(read)));
      }
      const bool named = source.kind == PolicySource::Kind::env_path && !source.name.empty();
      return PolicyText{named ? source.name : source.path_or_text, std::get<0>(std::move(read))};
    }
    case PolicySource::Kind::env_inline: {
      std::string name = source.name.empty() ? "TCPTUNE_POLICY_TOML" : source.name;
      if (source.path_or_text.size() > kMaxPolicyBytes) {
        return Result(std::in_place_index<1>, file_error(name, too_large(source.path_or_text.size())));
      }
      return PolicyText{std::move(name), source.path_or_text};
    }
    case PolicySource::Kind::builtin: break;
  }
  return PolicyText{};
}

LoadResult load_discovered(const PolicySource& source) {
  if (source.kind == PolicySource::Kind::builtin) {
    return LoadResult{std::variant<Policy, PolicyError>(std::in_place_index<0>, builtin_default_policy())};
  }
  std::variant<PolicyText, PolicyError> read = read_discovered(source);
  if (read.index() == 1) {
    return failed(std::get<1>(std::move(read)));
  }
  const PolicyText& policy = std::get<0>(read);
  return load_policy_text(policy.text, policy.name);
}

}  // namespace tcptune::config
