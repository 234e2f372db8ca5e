#include <limits.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "commands.hpp"
#include "executable_inspector.hpp"
#include "log_summary.hpp"
#include "tcptune/config/policy_loader.hpp"

namespace tcptune::cli {

namespace {

namespace fs = std::filesystem;

// libtcptune.so next to this binary: the build tree (bin/ and lib/) or an install tree.
// TCPTUNE_SHIM overrides the search; it must name a file, or the run would go untuned silently.
std::string locate_shim(std::string& problem) {
  std::error_code error;
  if (const char* explicit_path = std::getenv("TCPTUNE_SHIM"); explicit_path != nullptr && *explicit_path != '\0') {
    if (!fs::is_regular_file(explicit_path, error)) {
      problem = std::string("TCPTUNE_SHIM=") + explicit_path + " is not a file";
      return {};
    }
    return fs::weakly_canonical(explicit_path, error).string();
  }
  problem = "cannot find libtcptune.so next to this tcptune (set TCPTUNE_SHIM=/path/libtcptune.so)";
  const fs::path self = fs::read_symlink("/proc/self/exe", error);
  if (error) {
    return {};
  }
  const fs::path dir = self.parent_path();
  for (const fs::path& candidate :
       {dir / "libtcptune.so", dir / "../lib/libtcptune.so", dir / "../lib/" TCPTUNE_MULTIARCH "/libtcptune.so",
        dir / "../lib64/libtcptune.so", dir / "../lib/tcptune/libtcptune.so"}) {
    if (fs::exists(candidate, error)) {
      return fs::weakly_canonical(candidate, error).string();
    }
  }
  return {};
}

// Like execvp's search: the path CMD will run from, or empty. `found_not_executable` is set
// when only a non-executable file of that name was found (the shell's 126, not 127).
std::string resolve_command(const std::string& command, bool& found_not_executable) {
  found_not_executable = false;
  if (command.find('/') != std::string::npos) {
    return command;
  }
  const char* path = std::getenv("PATH");
  std::string dirs = path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin";
  std::size_t start = 0;
  while (start <= dirs.size()) {
    const std::size_t end = dirs.find(':', start);
    std::string dir = dirs.substr(start, end == std::string::npos ? std::string::npos : end - start);
    std::string candidate = (dir.empty() ? std::string(".") : dir) + "/" + command;
    struct stat info {};
    if (::stat(candidate.c_str(), &info) == 0 && S_ISREG(info.st_mode)) {
      if (access(candidate.c_str(), X_OK) == 0) {
        return candidate;
      }
      found_not_executable = true;
    }
    if (end == std::string::npos) {
      break;
    }
    start = end + 1;
  }
  return {};
}

std::string absolute(const std::string& path) {
  std::error_code error;
  const fs::path result = fs::absolute(path, error);
  return error ? path : result.string();
}

// ld.so separates LD_PRELOAD entries with colons or spaces. The shim goes first, once, so
// its hooks see every call before the other interposers.
std::string preload_with_shim_first(const std::string& shim, const char* existing) {
  std::string preload = shim;
  const std::string current = existing != nullptr ? existing : "";
  std::size_t start = 0;
  while (start < current.size()) {
    const std::size_t end = current.find_first_of(": ", start);
    const std::string entry = current.substr(start, end == std::string::npos ? std::string::npos : end - start);
    std::error_code error;
    const bool is_shim = !entry.empty() && (entry == shim || fs::weakly_canonical(entry, error).string() == shim);
    if (!entry.empty() && !is_shim) {
      preload += ":" + entry;
    }
    if (end == std::string::npos) {
      break;
    }
    start = end + 1;
  }
  return preload;
}

int usage() {
  (void)std::fputs("usage: tcptune run [--policy FILE] [--log FILE | --no-log] [-q] [-v] -- CMD ARGS...\n", stderr);
  return kExitUsage;
}

// execv, and /bin/sh for a script without "#!"; returns the exit status if it cannot.
int exec_command(const std::string& resolved, const std::string& command, std::vector<char*>& argv) {
  execv(resolved.c_str(), argv.data());
  int error = errno;
  if (error == ENOEXEC) {
    // A script without "#!": run it with /bin/sh, as execvp and the shell do.
    argv.insert(argv.begin(), const_cast<char*>("/bin/sh"));
    argv[1] = const_cast<char*>(resolved.c_str());
    execv("/bin/sh", argv.data());
    error = errno;
  }
  (void)std::fprintf(stderr, "tcptune run: %s: %s\n", command.c_str(), std::generic_category().message(error).c_str());
  return error == ENOENT ? 127 : 126;
}

// CMD as a child, so that its summary can follow. Like a shell running a foreground job,
// tcptune ignores the terminal's SIGINT/SIGQUIT (the child gets them too) and passes SIGTERM
// and SIGHUP on. Returns the child's exit status, 128+N if signal N ended it.
pid_t g_child = -1;
void forward_signal(int signal_number) {
  if (g_child > 0) {
    kill(g_child, signal_number);
  }
}

int run_child(const std::string& resolved, std::vector<char*>& argv) {
  const std::string command = argv[0];
  g_child = fork();
  if (g_child < 0) {
    (void)std::fprintf(stderr, "tcptune run: fork: %s\n", std::generic_category().message(errno).c_str());
    return 1;
  }
  if (g_child == 0) {
    _exit(exec_command(resolved, command, argv));
  }
  (void)std::signal(SIGINT, SIG_IGN);
  (void)std::signal(SIGQUIT, SIG_IGN);
  (void)std::signal(SIGTERM, forward_signal);
  (void)std::signal(SIGHUP, forward_signal);
  int status = 0;
  while (waitpid(g_child, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

void print_run_summary(const std::string& log) {
  LogSummary summary;
  std::string error;
  if (!summarize_logs({log}, "rule", summary, error) || summary.total.connections == 0) {
    return;  // no TCP connection was measured: nothing to say
  }
  (void)std::fputs("\ntcptune: connections measured by the shim\n", stderr);
  print_summary_table(stderr, summary, "rule");
  (void)std::fprintf(stderr, "tcptune: log %s (tcptune report %s)\n", log.c_str(), log.c_str());
}

}  // namespace

int run_command(const std::vector<std::string>& args) {
  std::string policy;
  std::string log;
  bool verbose = false;
  bool no_log = false;
  bool quiet = false;
  std::size_t i = 0;
  for (; i < args.size(); ++i) {
    if (args[i] == "--") {
      ++i;
      break;
    }
    if ((args[i] == "--policy" || args[i] == "--log") && i + 1 < args.size()) {
      (args[i] == "--policy" ? policy : log) = args[i + 1];
      ++i;
    } else if (args[i] == "-v" || args[i] == "--verbose") {
      verbose = true;
    } else if (args[i] == "--no-log") {
      no_log = true;
    } else if (args[i] == "-q" || args[i] == "--quiet") {
      quiet = true;
    } else if (args[i].rfind('-', 0) == 0) {
      (void)std::fprintf(stderr, "tcptune run: unknown option '%s'\n", args[i].c_str());
      return usage();
    } else {
      break;  // the command itself, without "--"
    }
  }
  if (i >= args.size()) {
    return usage();
  }
  std::string problem;
  const std::string shim = locate_shim(problem);
  if (shim.empty()) {
    (void)std::fprintf(stderr, "tcptune run: %s\n", problem.c_str());
    return 1;
  }
  if (!policy.empty()) {
    const config::LoadResult loaded = config::load_policy_file(policy);
    if (!loaded.ok()) {
      (void)std::fprintf(stderr, "tcptune: %s\n", loaded.error().to_string().c_str());
      return kExitConfig;
    }
    setenv("TCPTUNE_POLICY", absolute(policy).c_str(), 1);
  }
  // A log by default, in jsonl so the summary (and tcptune report) can read it.
  std::string summary_log;
  if (!no_log) {
    if (log.empty() && std::getenv("TCPTUNE_LOG") == nullptr) {
      log = "tcptune-" + fs::path(args[i]).filename().string() + "-" + std::to_string(getpid()) + ".jsonl";
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
  if (verbose) {
    setenv("TCPTUNE_LOG_LEVEL", "debug", 1);
  }
  const std::string preload = preload_with_shim_first(shim, std::getenv("LD_PRELOAD"));
  setenv("LD_PRELOAD", preload.c_str(), 1);

  const std::string& command = args[i];
  bool found_not_executable = false;
  const std::string resolved = resolve_command(command, found_not_executable);
  if (resolved.empty()) {
    (void)std::fprintf(stderr, "tcptune run: %s: %s\n", command.c_str(),
                       found_not_executable ? "permission denied" : "command not found");
    return found_not_executable ? 126 : 127;
  }
  for (const std::string& reason : preload_obstacles(resolved)) {
    (void)std::fprintf(stderr, "tcptune: warning: %s; it will run untuned\n", reason.c_str());
  }
  std::vector<char*> argv;
  for (std::size_t j = i; j < args.size(); ++j) {
    argv.push_back(const_cast<char*>(args[j].c_str()));
  }
  argv.push_back(nullptr);
  if (!summary_log.empty() && !quiet) {
    const int status = run_child(resolved, argv);
    print_run_summary(summary_log);
    return status;
  }
  return exec_command(resolved, command, argv);
}

}  // namespace tcptune::cli
