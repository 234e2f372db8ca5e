// The subcommands of tcptune-linkem. Each returns the process exit status: 0 success, 1 failure,
// 2 bad arguments, 77 not root or no /dev/net/tun (and `run` returns the command's status).
#pragma once

#include <span>
#include <string_view>

namespace tcptune::linkem {

inline constexpr int kExitFailure = 1;
inline constexpr int kExitUsage = 2;
inline constexpr int kExitUnsupported = 77;

int command_up(std::span<const std::string_view> args);
int command_down(std::span<const std::string_view> args);
int command_status(std::span<const std::string_view> args);
int command_set(std::span<const std::string_view> args);
int command_run(std::span<const std::string_view> args, char** command_argv);

}  // namespace tcptune::linkem
