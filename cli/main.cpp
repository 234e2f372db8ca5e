#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "command_line.hpp"
#include "commands.hpp"

namespace {

int dispatch(const tcptune::cli::CommandLine& line) {
  using tcptune::cli::Subcommand;
  switch (*line.subcommand) {
    case Subcommand::run: return tcptune::cli::run_command(line.run);
    case Subcommand::check: return tcptune::cli::check_command(line.check);
    case Subcommand::doctor: return tcptune::cli::doctor_command();
    case Subcommand::report: return tcptune::cli::report_command(line.report);
    case Subcommand::advise: return tcptune::cli::advise_command(line.advise);
    case Subcommand::ab: return tcptune::cli::ab_command(line.ab);
    case Subcommand::kube_inject: return tcptune::cli::kube_inject_command(line.kube_inject);
    case Subcommand::install: return tcptune::cli::install_command(line.install);
    case Subcommand::enable: return tcptune::cli::enable_command(line.enable);
    case Subcommand::disable: return tcptune::cli::disable_command(line.disable);
  }
  return tcptune::cli::kExitUsage;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const tcptune::cli::CommandLine line =
        tcptune::cli::parse_command_line(std::vector<std::string>(argv + 1, argv + argc));
    if (!line.subcommand.has_value()) {
      (void)std::fputs(line.message.c_str(), line.message_to_stderr ? stderr : stdout);
      return line.exit_status;
    }
    return dispatch(line);
  } catch (const std::exception& error) {
    (void)std::fprintf(stderr, "tcptune: %s\n", error.what());
    return 1;
  }
}
