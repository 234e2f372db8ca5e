#include "tcptune/config/log_destination.hpp"

#include <cstdlib>

#include "tcptune/config/log_names.hpp"

namespace tcptune::config {

namespace {

std::string not_one_of(const char* name, const char* value, const std::string& expected) {
  return std::string(name) + "='" + value + "' is not one of " + expected + "; ignored";
}

}  // namespace

LogDestination resolve_log_destination(const Policy* policy, bool read_environment) {
  LogDestination destination;
  const auto getenv = [read_environment](const char* name) -> const char* {
    return read_environment ? std::getenv(name) : nullptr;
  };
  const char* env_path = getenv("TCPTUNE_LOG");
  destination.pattern = env_path != nullptr ? env_path : (policy != nullptr ? policy->log.path : "");
  if (policy != nullptr) {
    destination.level = policy->log.level;
    destination.format = policy->log.format;
  }
  if (const char* text = getenv("TCPTUNE_LOG_LEVEL"); text != nullptr) {
    if (auto from_env = log_level_named(text)) {
      destination.level = *from_env;
    } else {
      destination.problems.push_back(not_one_of("TCPTUNE_LOG_LEVEL", text, log_level_names("", ", ", ", ")));
    }
  }
  if (const char* text = getenv("TCPTUNE_LOG_FORMAT"); text != nullptr) {
    if (auto from_env = log_format_named(text)) {
      destination.format = *from_env;
    } else {
      destination.problems.push_back(not_one_of("TCPTUNE_LOG_FORMAT", text, log_format_names("", ", ", ", ")));
    }
  }
  return destination;
}

bool is_stderr_log(std::string_view path) noexcept {
  return path == "stderr" || path == "/dev/stderr" || path == "/dev/fd/2" || path == "/proc/self/fd/2";
}

std::string expand_log_path(std::string_view pattern, std::string_view program, long pid) {
  std::string out;
  for (std::size_t i = 0; i < pattern.size();) {
    if (pattern.substr(i, 9) == "{program}") {
      out += program;
      i += 9;
    } else if (pattern.substr(i, 5) == "{pid}") {
      out += std::to_string(pid);
      i += 5;
    } else {
      out += pattern[i++];
    }
  }
  return out;
}

}  // namespace tcptune::config
