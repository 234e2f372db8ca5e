#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <system_error>
#include <variant>

#include "commands.hpp"
#include "default_log.hpp"
#include "executable_inspector.hpp"
#include "log_cut_notices.hpp"
#include "log_summary.hpp"
#include "observe_policy.hpp"
#include "program_exit.hpp"
#include "program_launch.hpp"
#include "run_policy.hpp"
#include "stderr_stream.hpp"
#include "supervised_run.hpp"
#include "supervision.hpp"
#include "tcptune/config/arm_label.hpp"
#include "tcptune/config/escape.hpp"
#include "tcptune/config/log_cut_notice.hpp"
#include "tcptune/config/log_destination.hpp"
#include "tcptune/config/log_names.hpp"
#include "tcptune/config/policy_loader.hpp"

namespace tcptune::cli {

namespace {

namespace fs = std::filesystem;

// Where the run's processes log, as they will resolve it (resolve_log_destination), and what
// the table after the program can make of it.
struct RunLog {
  std::string pattern;   // as the processes have it; empty: no log
  std::string file;      // the one file the table reads (absolute); empty: none
  std::string no_table;  // why there is no table, when there is a log but no file to read
};

RunLog run_log(const config::Policy* policy) {
  const config::LogDestination destination = config::resolve_log_destination(policy, true);
  RunLog log;
  log.pattern = destination.pattern;
  if (log.pattern.empty() || destination.level == config::LogLevel::off) {
    log.pattern.clear();
  } else if (config::is_stderr_log(log.pattern)) {
    log.no_table =
        "the log went to stderr, with the program's own lines: no table (tcptune report reads a file: "
        "--log FILE)";
  } else if (log.pattern.find('{') != std::string::npos) {
    log.no_table = "one log per process (" + log.pattern + "): no table (tcptune report FILE...)";
  } else if (destination.format != config::LogFormat::jsonl) {
    log.no_table = "a text log (" + log.pattern + "): no table (tcptune report reads jsonl, the default format)";
  } else {
    log.file = absolute(log.pattern);
  }
  return log;
}

// One line on stderr that never blocks: after a log on stderr, the pipe may be full and unread.
void say_without_blocking(const std::string& line) {
  telemetry::StderrStream stream;
  if (stream.open(3) == nullptr) {
    (void)stream.write(line);
  }
}

// The longest the table at exit may take to read the log.
constexpr std::chrono::seconds kSummaryReadFor{2};

void print_run_summary(const RunLog& log, bool supervised, bool observed, LogCutNotices& notices, int status) {
  if (!log.no_table.empty()) {
    say_without_blocking("tcptune: " + config::escape_for_display(log.no_table, false) + "\n");
    return;
  }
  // The shim writes only to a regular file; reading a FIFO named here would wait for a writer.
  std::error_code error_code;
  const std::string shown = config::escape_for_display(log.file, false);
  if (!fs::is_regular_file(log.file, error_code)) {
    // The shim loads its core, which opens the log, at a process's first TCP socket.
    if (!log.file.empty() && !fs::exists(fs::symlink_status(log.file, error_code))) {
      (void)std::fprintf(stderr,
                         "tcptune: no TCP connection measured: no process of the run opened one, so none wrote %s\n",
                         shown.c_str());
    }
    return;
  }
  LogSummary summary;
  std::string error;
  std::string cut;  // why the log was cut short, if it was
  for (const auto& [path, reason] : notices.take()) {
    cut = absolute(path) == log.file ? reason : cut;
  }
  // Bounded: a long-lived service's log may take minutes to read, and its container's grace period
  // after SIGTERM is shorter.
  if (!summarize_logs({log.file}, "rule", summary, error, std::chrono::steady_clock::now() + kSummaryReadFor)) {
    (void)std::fprintf(stderr, "tcptune: log %s: %s\n", shown.c_str(), error.c_str());
    return;
  }
  if (summary.unfinished) {
    (void)std::fprintf(stderr,
                       "tcptune: log %s: no table: %.0f MB, longer than %lld s to read at exit (tcptune report %s)\n",
                       shown.c_str(), static_cast<double>(fs::file_size(log.file, error_code)) / 1e6,
                       static_cast<long long>(kSummaryReadFor.count()), shown.c_str());
    return;
  }
  if (summary.total.connections == 0 && cut.empty()) {
    // A program killed by a signal writes no summaries; its conn_open records are all there is.
    if (WIFSIGNALED(status) && fs::file_size(log.file, error_code) > 0 && !error_code) {
      (void)std::fprintf(stderr,
                         "\ntcptune: the program was killed by signal %d (%s) before the shim could write its "
                         "connections' summaries: the log has what was written before\n"
                         "tcptune: log %s\n",
                         WTERMSIG(status), strsignal(WTERMSIG(status)), shown.c_str());
      return;
    }
    (void)std::fprintf(stderr, "tcptune: log %s (no TCP connection measured)\n", shown.c_str());
    return;
  }
  if (summary.total.connections != 0) {
    const char* heading = supervised ? "\ntcptune: connections tuned from outside (supervised mode)\n"
                                     : "\ntcptune: connections measured by the shim\n";
    if (observed) {
      heading = supervised ? "\ntcptune: connections observed from outside (supervised mode; no option set)\n"
                           : "\ntcptune: connections observed by the shim (no option set)\n";
    }
    (void)std::fputs(heading, stderr);
    print_summary_table(stderr, summary, "rule");
  }
  if (!cut.empty()) {
    (void)std::fprintf(stderr, "tcptune: the log was cut short (%s): the records after its last line are lost%s\n",
                       cut.c_str(), summary.total.connections != 0 ? ", so the counts above are short" : "");
  }
  (void)std::fprintf(stderr, "tcptune: log %s (tcptune report %s)\n", shown.c_str(), shown.c_str());
}

// --log, else TCPTUNE_LOG, else the policy's [log] path, else a file in the default directory.
void choose_log(const RunOptions& options, const config::Policy* policy) {
  if (!options.log.empty()) {
    setenv("TCPTUNE_LOG", config::is_stderr_log(options.log) ? options.log.c_str() : absolute(options.log).c_str(), 1);
    return;
  }
  if (std::getenv("TCPTUNE_LOG") != nullptr || (policy != nullptr && !policy->log.path.empty())) {
    return;  // the processes read it there themselves
  }
  std::string program = fs::path(options.command[0]).filename().string();
  std::string problem;
  const std::string path = default_log_path(program.empty() ? "program" : program, getpid(), problem);
  if (path.empty()) {
    (void)std::fprintf(stderr, "tcptune: warning: %s; no log (--log FILE names one)\n",
                       config::escape_for_display(problem, false).c_str());
    return;
  }
  setenv("TCPTUNE_LOG", path.c_str(), 1);
}

}  // namespace

int run_command(const RunOptions& options) {
  const std::vector<std::string>& args = options.command;
  // Read once: every process of the run gets this text, whatever happens to the file meanwhile.
  // One from TCPTUNE_POLICY that does not load is reported by the program (fail-open), as without run.
  RunPolicy run_policy;
  std::string observe_text = kObservePolicyText;
  std::string observe_name = kObservePolicyName;
  if (options.observe && !options.policy.empty()) {
    // Observing as FILE logs: its [log] only (its log and textfile), FILE validated first.
    RunPolicy logging;
    const config::LoadResult read = logging.load(options.policy);
    if (!read.ok()) {
      (void)std::fprintf(stderr, "tcptune: %s\n", read.error().to_string().c_str());
      return kExitConfig;
    }
    std::variant<std::string, config::PolicyError> text = config::read_policy_file(options.policy);
    if (text.index() == 0) {
      observe_text = observe_policy_logging_as(std::get<0>(text));
      observe_name += ", [log] of " + read.policy().source;
    }
  }
  const config::LoadResult loaded =
      options.observe ? run_policy.load_text(observe_text, observe_name) : run_policy.load(options.policy);
  if (!loaded.ok() && !options.policy.empty()) {
    (void)std::fprintf(stderr, "tcptune: %s\n", loaded.error().to_string().c_str());
    return kExitConfig;
  }
  if (!options.arm.empty()) {
    setenv(config::kArmEnv, options.arm.c_str(), 1);  // validated by the command line
  }
  if (const std::string copy_problem = run_policy.pass_on(); !copy_problem.empty()) {
    (void)std::fprintf(stderr, "tcptune: warning: %s; programs started later read the file again\n",
                       copy_problem.c_str());
  }
  if (options.verbose) {
    setenv("TCPTUNE_LOG_LEVEL", "debug", 1);
  } else if (const char* level = std::getenv("TCPTUNE_LOG_LEVEL"); options.observe && level != nullptr) {
    // Observing is the records: a level that would leave out conn_open and conn_close is raised.
    if (const std::optional<config::LogLevel> named = config::log_level_named(level);
        named.has_value() && *named > config::LogLevel::info) {
      setenv("TCPTUNE_LOG_LEVEL", "info", 1);
    }
  }
  // A log by default (jsonl, so the table and tcptune report can read it), where the policy
  // puts it, or in the default directory (default_log.hpp).
  const config::Policy* policy = loaded.ok() ? &loaded.policy() : nullptr;
  RunLog log;
  if (options.no_log) {
    setenv("TCPTUNE_LOG", "", 1);  // an empty path: no log, whatever the policy says
  } else {
    choose_log(options, policy);
    log = run_log(policy);
  }
  const std::string& command = args[0];
  bool found_not_executable = false;
  const std::string resolved = resolve_command(command, found_not_executable);
  if (resolved.empty()) {
    (void)std::fprintf(stderr, "tcptune run: %s: %s\n", command.c_str(),
                       found_not_executable ? "permission denied" : "command not found");
    return found_not_executable ? 126 : 127;
  }
  // Preloaded where the loader will preload; supervised where it will not (static, Go, another C
  // library's loader, setuid or file capabilities) or when asked; untuned where supervision would
  // strip the program's privileges (no_new_privs, needed without CAP_SYS_ADMIN).
  const PreloadObstacles obstacles = preload_obstacles(resolved);
  const bool strips_privileges = obstacles.privileged && supervisor::filter_needs_no_new_privs();
  const bool supervised =
      (options.supervise || obstacles.bypasses_loader || obstacles.privileged) && !strips_privileges;
  for (const std::string& reason : obstacles.reasons) {
    (void)std::fprintf(stderr, supervised ? "tcptune: %s\n" : "tcptune: warning: %s; it will run untuned\n",
                       config::escape_for_display(reason, false).c_str());
  }
  if (strips_privileges) {
    (void)std::fprintf(stderr,
                       "tcptune: warning: supervision would strip its privileges (no_new_privs, needed without "
                       "CAP_SYS_ADMIN): not supervised\n");
  }
  if (supervised) {
    (void)std::fprintf(stderr, "tcptune: %s %s from outside: supervised mode%s\n",
                       options.observe ? "observing" : "tuning", config::escape_for_display(command, false).c_str(),
                       options.supervise ? " (--supervise)" : "");
    // An LD_PRELOAD the program inherited (a container's environment) is not risked under a
    // loader the shim was never tried with. Under musl it stays: the shim is harmless there, and
    // a glibc program started from it keeps it, as under a glibc program run with --supervise.
    if (const char* inherited = std::getenv("LD_PRELOAD"); obstacles.unknown_loader && inherited != nullptr) {
      if (const std::optional<std::string> kept = preload_without_shim(inherited); kept.has_value()) {
        (void)std::fprintf(stderr, "tcptune: %s taken out of LD_PRELOAD for it\n", kShimFileName);
        if (kept->empty()) {
          unsetenv("LD_PRELOAD");
        } else {
          setenv("LD_PRELOAD", kept->c_str(), 1);
        }
      }
    }
  } else {
    // Only a preloaded run needs the shim: a supervised one is this file alone (a static tcptune
    // copied into an image without glibc).
    std::string problem;
    const std::string shim = locate_preloadable_shim(problem);
    if (shim.empty()) {
      (void)std::fprintf(stderr, "tcptune run: %s\n", problem.c_str());
      return 1;
    }
    const std::string preload = preload_with_shim_first(shim, std::getenv("LD_PRELOAD"));
    setenv("LD_PRELOAD", preload.c_str(), 1);
  }
  // A log cut short (a full disk, `ulimit -f`) is heard of from the process that cut it.
  LogCutNotices notices;
  if (!log.file.empty() && !options.quiet && !notices.name().empty()) {
    setenv(config::kLogCutNoticeEnv, notices.name().c_str(), 1);
  }
  std::vector<char*> argv;
  argv.reserve(args.size() + 1);
  for (const std::string& arg : args) {
    argv.push_back(const_cast<char*>(arg.c_str()));
  }
  argv.push_back(nullptr);
  // The table (and a private copy of the policy to remove) need tcptune after the program;
  // then it ends as the program did, by the same signal if one killed it.
  const bool print_summary = !log.pattern.empty() && !options.quiet;
  if (!supervised && !print_summary && !run_policy.has_copy()) {
    return exec_command(resolved, command, argv);
  }
  const int status = supervised ? run_supervised(resolved, argv, loaded) : run_child(resolved, argv);
  run_policy.remove_copy();
  // The table goes to a stderr whose reader may be gone (`| head`): a write error, not a
  // SIGPIPE that would replace the program's status with tcptune's.
  (void)std::signal(SIGPIPE, SIG_IGN);
  if (print_summary) {
    print_run_summary(log, supervised, options.observe, notices, status);
  }
  return end_as_program(status);
}

}  // namespace tcptune::cli
