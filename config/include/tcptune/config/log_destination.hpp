// Where and how a process logs: the policy's [log], overridden by TCPTUNE_LOG, TCPTUNE_LOG_LEVEL
// and TCPTUNE_LOG_FORMAT. One reading for the preloaded shim and the supervisor.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "tcptune/config/policy.hpp"

namespace tcptune::config {

struct LogDestination {
  std::string pattern;  // may contain {pid} and {program}; empty: no log
  LogLevel level = LogLevel::info;
  LogFormat format = LogFormat::jsonl;
  // "TCPTUNE_LOG_LEVEL='loud' is not one of ...; ignored": one line each, for stderr.
  std::vector<std::string> problems;
};

// `read_environment` is false under secure execution (setuid), where the variables are ignored.
LogDestination resolve_log_destination(const Policy* policy, bool read_environment);

// "stderr" (also /dev/stderr, /dev/fd/2, /proc/self/fd/2): the log goes to the process's own
// standard error, as containers and journald collect it, not to a file of that name.
bool is_stderr_log(std::string_view path) noexcept;

// {program} and {pid} in a log or textfile path replaced by their values.
std::string expand_log_path(std::string_view pattern, std::string_view program, long pid);

}  // namespace tcptune::config
