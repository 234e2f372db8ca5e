// Runs a helper program (ip, tc) to completion and collects what it printed, for error messages.
#pragma once

#include <string>
#include <vector>

namespace tcptune::linkem {

struct CommandResult {
  int exit_code = -1;  // -1 when it could not be started or was killed by a signal
  std::string output;  // stdout and stderr together, trailing newlines removed
  bool ok() const { return exit_code == 0; }
};

CommandResult run_command(const std::vector<std::string>& argv);

// "ip netns add tcptune-a" for messages.
std::string command_line(const std::vector<std::string>& argv);

}  // namespace tcptune::linkem
