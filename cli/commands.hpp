// The `tcptune` subcommands. Each returns the process exit status.
#pragma once

#include <string>
#include <vector>

namespace tcptune::cli {

int run_command(const std::vector<std::string>& args);
int check_command(const std::vector<std::string>& args);
int doctor_command(const std::vector<std::string>& args);
int report_command(const std::vector<std::string>& args);
int ab_command(const std::vector<std::string>& args);

// Exit statuses shared by the commands.
inline constexpr int kExitUsage = 2;
inline constexpr int kExitConfig = 78;  // EX_CONFIG: the policy is invalid

}  // namespace tcptune::cli
