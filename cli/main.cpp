#include <cstdio>
#include <cstring>
#include <exception>

#include "commands.hpp"

namespace {
constexpr const char* kUsage =
    "usage: tcptune COMMAND ...\n"
    "  run [--policy FILE] [--log FILE] [-v] -- CMD ARGS...   run CMD with libtcptune.so preloaded\n"
    "  check FILE                                           validate a policy and explain it for this host\n"
    "  doctor                                               this network namespace's TCP settings\n"
    "  report LOG... [--by rule|peer|program|callsite] [--json]  connections, latency, slow call sites\n"
    "  ab [--runs N] [--policy FILE] [--out DIR] -- CMD...  CMD observed vs tuned, side by side, with a CDF plot\n"
    "  --version                                            print the version\n";
}

int main(int argc, char** argv) {
  if (argc < 2 || std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "help") == 0 ||
      std::strcmp(argv[1], "-h") == 0) {
    (void)std::fputs(kUsage, argc < 2 ? stderr : stdout);
    return argc < 2 ? tcptune::cli::kExitUsage : 0;
  }
  if (std::strcmp(argv[1], "--version") == 0) {
    std::printf("tcptune %s\n", TCPTUNE_VERSION);
    return 0;
  }
  const std::vector<std::string> args(argv + 2, argv + argc);
  try {
    if (std::strcmp(argv[1], "run") == 0) {
      return tcptune::cli::run_command(args);
    }
    if (std::strcmp(argv[1], "check") == 0) {
      return tcptune::cli::check_command(args);
    }
    if (std::strcmp(argv[1], "doctor") == 0) {
      return tcptune::cli::doctor_command(args);
    }
    if (std::strcmp(argv[1], "report") == 0) {
      return tcptune::cli::report_command(args);
    }
    if (std::strcmp(argv[1], "ab") == 0) {
      return tcptune::cli::ab_command(args);
    }
  } catch (const std::exception& error) {
    (void)std::fprintf(stderr, "tcptune: %s\n", error.what());
    return 1;
  }
  (void)std::fprintf(stderr, "tcptune: unknown command '%s'\n%s", argv[1], kUsage);
  return tcptune::cli::kExitUsage;
}
