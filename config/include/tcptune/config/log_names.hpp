// The names of log levels and formats, as the policy's [log] and the TCPTUNE_LOG_LEVEL and
// TCPTUNE_LOG_FORMAT variables write them: one list for the loader and the shim.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "tcptune/config/policy.hpp"

namespace tcptune::config {

std::optional<LogLevel> log_level_named(std::string_view name);
std::optional<LogFormat> log_format_named(std::string_view name);

// Every name, in order, each between `quote`s and joined by `separator` (`last_separator`
// before the last one): "trace, debug, info, warn, error, off" or "\"text\" or \"jsonl\"".
std::string log_level_names(std::string_view quote, std::string_view separator, std::string_view last_separator);
std::string log_format_names(std::string_view quote, std::string_view separator, std::string_view last_separator);

}  // namespace tcptune::config
