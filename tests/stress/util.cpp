#include "util.hpp"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>

namespace tcptune::stress {

Args::Args(int argc, char** argv, int first, const std::vector<std::string>& known) {
  for (int i = first; i < argc; ++i) {
    std::string name = argv[i];
    if (std::find(known.begin(), known.end(), name) == known.end()) {
      die("unknown argument " + name);
    }
    const bool has_value = i + 1 < argc && std::string_view(argv[i + 1]).substr(0, 2) != "--";
    values_[name] = has_value ? argv[++i] : "";
  }
}

std::string Args::text(const std::string& name, const std::string& fallback) const {
  const auto found = values_.find(name);
  return found == values_.end() ? fallback : found->second;
}

std::int64_t Args::number(const std::string& name, std::int64_t fallback) const {
  const auto found = values_.find(name);
  if (found == values_.end()) {
    return fallback;
  }
  char* end = nullptr;
  const long long value = std::strtoll(found->second.c_str(), &end, 10);
  if (end == found->second.c_str() || *end != '\0') {
    die(name + " needs a number, not '" + found->second + "'");
  }
  return value;
}

bool Args::flag(const std::string& name) const {
  return values_.contains(name);
}

std::int64_t monotonic_ns() noexcept {
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  return std::int64_t{now.tv_sec} * 1'000'000'000 + now.tv_nsec;
}

void sleep_ns(std::int64_t ns) noexcept {
  timespec left{static_cast<time_t>(ns / 1'000'000'000), static_cast<long>(ns % 1'000'000'000)};
  while (nanosleep(&left, &left) != 0 && errno == EINTR) {
  }
}

std::uint64_t raise_fd_limit(std::uint64_t wanted) noexcept {
  rlimit limit{};
  getrlimit(RLIMIT_NOFILE, &limit);
  if (limit.rlim_max < wanted) {
    rlimit raised{wanted, wanted};
    if (setrlimit(RLIMIT_NOFILE, &raised) == 0) {
      return wanted;
    }
  }
  limit.rlim_cur = std::max<rlim_t>(limit.rlim_cur, std::min<rlim_t>(wanted, limit.rlim_max));
  setrlimit(RLIMIT_NOFILE, &limit);
  getrlimit(RLIMIT_NOFILE, &limit);
  return limit.rlim_cur;
}

std::uint64_t resident_bytes() noexcept {
  std::ifstream statm("/proc/self/statm");
  std::uint64_t size = 0;
  std::uint64_t resident = 0;
  statm >> size >> resident;
  return resident * static_cast<std::uint64_t>(sysconf(_SC_PAGESIZE));
}

std::string json_string(std::string_view text) {
  std::string out = "\"";
  for (const char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\u%04x", c);
      out += escaped;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

void Json::name(std::string_view name) {
  if (!body_.empty()) {
    body_ += ",";
  }
  body_ += json_string(name) + ":";
}

Json& Json::field(std::string_view name, std::int64_t value) {
  this->name(name);
  body_ += std::to_string(value);
  return *this;
}

Json& Json::field(std::string_view name, std::uint64_t value) {
  this->name(name);
  body_ += std::to_string(value);
  return *this;
}

Json& Json::field(std::string_view name, double value) {
  this->name(name);
  char text[64];
  std::snprintf(text, sizeof text, "%.6g", value);
  body_ += text;
  return *this;
}

Json& Json::field(std::string_view name, std::string_view value) {
  this->name(name);
  body_ += json_string(value);
  return *this;
}

Json& Json::raw(std::string_view name, std::string_view json) {
  this->name(name);
  body_ += json;
  return *this;
}

void die(const std::string& message) {
  std::fprintf(stderr, "tcptune_stress: %s\n", message.c_str());
  std::exit(2);
}

}  // namespace tcptune::stress
