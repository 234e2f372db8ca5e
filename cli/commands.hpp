// The `tcptune` subcommands, each given its parsed options. Each returns the process exit status.
#pragma once

#include "command_line.hpp"

namespace tcptune::cli {

int run_command(const RunOptions& options);
int check_command(const CheckOptions& options);
int doctor_command();
int report_command(const ReportOptions& options);
int advise_command(const AdviseOptions& options);
int ab_command(const AbOptions& options);
int kube_inject_command(const KubeInjectOptions& options);
int install_command(const InstallOptions& options);
int enable_command(const EnableOptions& options);
int disable_command(const DisableOptions& options);

// Exit statuses shared by the commands (kExitUsage: command_line.hpp).
inline constexpr int kExitConfig = 78;  // EX_CONFIG: the policy is invalid

}  // namespace tcptune::cli
