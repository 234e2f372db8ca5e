#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <system_error>

#include "commands.hpp"
#include "executable_inspector.hpp"
#include "log_cut_notices.hpp"
#include "log_summary.hpp"
#include "program_exit.hpp"
#include "program_launch.hpp"
#include "run_policy.hpp"
#include "supervised_run.hpp"
#include "supervision.hpp"
#include "tcptune/config/escape.hpp"
#include "tcptune/config/log_cut_notice.hpp"
#include "tcptune/config/policy_loader.hpp"

namespace tcptune::cli {

namespace {

namespace fs = std::filesystem;

void print_run_summary(const std::string& log, bool supervised, LogCutNotices& notices, int status) {
  // The shim writes only to a regular file; reading a FIFO named here would wait for a writer.
  std::error_code error_code;
  if (!fs::is_regular_file(log, error_code)) {
    return;
  }
  LogSummary summary;
  std::string error;
  std::string cut;  // why the log was cut short, if it was
  for (const auto& [path, reason] : notices.take()) {
    cut = path == log ? reason : cut;
  }
  if (!summarize_logs({log}, "rule", summary, error)) {
    return;
  }
  if (summary.total.connections == 0 && cut.empty()) {
    // A program killed by a signal writes no summaries; its conn_open records are all there is.
    if (WIFSIGNALED(status) && fs::file_size(log, error_code) > 0 && !error_code) {
      (void)std::fprintf(stderr,
                         "\ntcptune: the program was killed by signal %d (%s) before the shim could write its "
                         "connections' summaries: the log has what was written before\n"
                         "tcptune: log %s\n",
                         WTERMSIG(status), strsignal(WTERMSIG(status)), log.c_str());
    }
    return;  // no TCP connection was measured: nothing to say
  }
  if (summary.total.connections != 0) {
    (void)std::fputs(supervised ? "\ntcptune: connections tuned from outside (supervised mode)\n"
                                : "\ntcptune: connections measured by the shim\n",
                     stderr);
    print_summary_table(stderr, summary, "rule");
  }
  if (!cut.empty()) {
    (void)std::fprintf(stderr, "tcptune: the log was cut short (%s): the records after its last line are lost%s\n",
                       cut.c_str(), summary.total.connections != 0 ? ", so the counts above are short" : "");
  }
  (void)std::fprintf(stderr, "tcptune: log %s (tcptune report %s)\n", log.c_str(), log.c_str());
}

}  // namespace

int run_command(const RunOptions& options) {
  const std::vector<std::string>& args = options.command;
  std::string log = options.log;
  // Read once: every process of the run gets this text, whatever happens to the file meanwhile.
  // One from TCPTUNE_POLICY that does not load is reported by the program (fail-open), as without run.
  RunPolicy run_policy;
  const config::LoadResult loaded = run_policy.load(options.policy);
  if (!loaded.ok() && !options.policy.empty()) {
    (void)std::fprintf(stderr, "tcptune: %s\n", loaded.error().to_string().c_str());
    return kExitConfig;
  }
  if (const std::string copy_problem = run_policy.pass_on(); !copy_problem.empty()) {
    (void)std::fprintf(stderr, "tcptune: warning: %s; programs started later read the file again\n",
                       copy_problem.c_str());
  }
  // A log by default, in jsonl so the summary (and tcptune report) can read it.
  std::string summary_log;
  if (!options.no_log) {
    if (log.empty() && std::getenv("TCPTUNE_LOG") == nullptr) {
      log = "tcptune-" + fs::path(args[0]).filename().string() + "-" + std::to_string(getpid()) + ".jsonl";
    }
    if (!log.empty()) {
      setenv("TCPTUNE_LOG", absolute(log).c_str(), 1);
    }
    const char* configured = std::getenv("TCPTUNE_LOG");
    const std::string path = configured != nullptr ? configured : "";
    if (!path.empty() && path.find('{') == std::string::npos) {  // a {pid} pattern names several files
      summary_log = path;
    }
    setenv("TCPTUNE_LOG_FORMAT", "jsonl", 0);
  }
  if (options.verbose) {
    setenv("TCPTUNE_LOG_LEVEL", "debug", 1);
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
    (void)std::fprintf(stderr, "tcptune: tuning %s from outside: supervised mode%s\n",
                       config::escape_for_display(command, false).c_str(), options.supervise ? " (--supervise)" : "");
    // An LD_PRELOAD the program inherited (a container's environment) would stop it before main.
    if (const char* inherited = std::getenv("LD_PRELOAD"); obstacles.foreign_loader && inherited != nullptr) {
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
    const std::string shim = locate_shim(problem);
    if (shim.empty()) {
      (void)std::fprintf(stderr, "tcptune run: %s\n", problem.c_str());
      return 1;
    }
    const std::string preload = preload_with_shim_first(shim, std::getenv("LD_PRELOAD"));
    setenv("LD_PRELOAD", preload.c_str(), 1);
  }
  // A log cut short (a full disk, `ulimit -f`) is heard of from the process that cut it.
  LogCutNotices notices;
  if (!summary_log.empty() && !options.quiet && !notices.name().empty()) {
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
  const bool print_summary = !summary_log.empty() && !options.quiet;
  if (!supervised && !print_summary && !run_policy.has_copy()) {
    return exec_command(resolved, command, argv);
  }
  const int status = supervised ? run_supervised(resolved, argv, loaded) : run_child(resolved, argv);
  run_policy.remove_copy();
  // The table goes to a stderr whose reader may be gone (`| head`): a write error, not a
  // SIGPIPE that would replace the program's status with tcptune's.
  (void)std::signal(SIGPIPE, SIG_IGN);
  if (print_summary) {
    print_run_summary(summary_log, supervised, notices, status);
  }
  return end_as_program(status);
}

}  // namespace tcptune::cli
