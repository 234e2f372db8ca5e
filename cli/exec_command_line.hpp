// An ExecStart= value as systemd reads it (systemd.service(5), "Command lines"): prefixes
// ("-", "@", ":", "+", "!", "!!") written before the program, the program, its arguments, and
// several commands on one line separated by a lone ";".
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace tcptune::cli {

struct ExecCommand {
  std::string prefixes;   // "-", "+", "-:"... as written
  std::string program;    // unquoted and unescaped, specifiers left as they are
  std::string arguments;  // everything after the program as written (quotes, $VAR, %i kept), or ""
  [[nodiscard]] bool sets_argv0() const { return prefixes.find('@') != std::string::npos; }
  [[nodiscard]] bool expands_variables() const { return prefixes.find(':') == std::string::npos; }
};

struct ExecCommands {
  std::vector<ExecCommand> commands;
  std::string error;  // why the value cannot be read ("unbalanced quotes"); commands is then empty
};

ExecCommands parse_exec_value(std::string_view value);

}  // namespace tcptune::cli
