// The `tcptune` command line, parsed by CLI11 into one options struct per subcommand. Parsing
// does nothing else, so every option's validation is reachable without running a command.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace tcptune::cli {

// The exit status of a usage error: an unknown option, a bad value, a missing argument.
inline constexpr int kExitUsage = 2;

struct RunOptions {
  std::string policy;
  std::string log;
  bool no_log = false;
  bool quiet = false;
  bool verbose = false;
  bool supervise = false;            // tune from outside (seccomp) even when the shim could be preloaded
  bool observe = false;              // the observe-only policy (observe_policy.hpp): measure, set nothing
  std::string arm;                   // --arm: TCPTUNE_ARM for every process of the run; empty: as set
  std::vector<std::string> command;  // CMD ARGS..., never empty after a successful parse
};

struct CheckOptions {
  std::string policy_file;
  std::string as_user;  // --as-user: the plan as this user's process gets it (name or uid)
};

struct ReportOptions {
  std::vector<std::string> logs;
  std::string by = "rule";  // rule, peer, program or callsite
  bool json = false;
};

struct AdviseOptions {
  std::vector<std::string> logs;
  std::string output;  // the advised policy; empty: none written
  bool json = false;
  // --heartbeat: bytes the peers' protocol skips between messages, which only the user can know;
  // with them slow start after idle gets keep_warm where no protocol preset fits the port.
  std::string heartbeat;
};

struct AbOptions {
  int runs = 5;  // the fewest with some margin for p < 0.05 (3 runs per arm can never reach it)
  std::string policy;
  std::string out = "tcptune-ab";
  std::vector<std::string> command;
  std::string run_timeout;  // a DURATION after which a run is stopped (SIGTERM) and counted failed; empty: none
  // A fleet A/B (--prometheus URL): two arms already running, told apart by a label, compared
  // step by step over a time window of what Prometheus scraped. Empty: runs of CMD.
  std::string prometheus;
  std::string arm_label = "arm";
  std::string on = "on";
  std::string off = "off";
  std::string window = "1h";
  std::string step = "1m";
  std::string end;       // Unix seconds; empty: now
  std::string program;   // program="..." on every query; empty: every program
  std::string selector;  // more label matchers, as PromQL writes them inside {}
};

struct KubeInjectOptions {
  std::string file = "-";    // manifests to read; "-": stdin
  std::string output = "-";  // "-": stdout
  bool uninject = false;
  bool quiet = false;  // no notes on stderr, errors only
  std::string image;   // the init container's image (default: tcptune-init:VERSION)
  std::string policy_configmap;
  std::string policy_key = "policy.toml";
};

struct InstallOptions {
  std::string destination;
};

// `tcptune enable UNIT` and `tcptune disable UNIT`: a systemd drop-in for a service.
struct EnableOptions {
  std::string unit;
  std::string policy;      // written as TCPTUNE_POLICY; empty: what the shim discovers
  std::string root;        // another root file system (an image); empty: this system
  bool supervise = false;  // wrap ExecStart= in `tcptune run --supervise` whatever the program
};

struct DisableOptions {
  std::string unit;
  std::string root;
};

enum class Subcommand { run, check, doctor, report, advise, ab, kube_inject, install, enable, disable };

struct CommandLine {
  std::optional<Subcommand> subcommand;  // unset when parsing alone ends the process
  RunOptions run;
  CheckOptions check;
  ReportOptions report;
  AdviseOptions advise;
  AbOptions ab;
  KubeInjectOptions kube_inject;
  InstallOptions install;
  EnableOptions enable;
  DisableOptions disable;
  // When parsing alone ends the process (--help, --version, a usage error): the text to print,
  // where, and the exit status.
  int exit_status = 0;
  std::string message;
  bool message_to_stderr = false;
};

// `args` are argv[1..]. Usage errors name the offending option or argument (kExitUsage).
CommandLine parse_command_line(const std::vector<std::string>& args);

// Every subcommand and option of the command line, with their help, footers and checks, bound to
// `line`'s fields (which must outlive `app`): what parse_command_line parses with, and what the
// man page's drift test and the shell completion walk (tools/cli_reference.cpp).
void define_command_line(CLI::App& app, CommandLine& line);

}  // namespace tcptune::cli
