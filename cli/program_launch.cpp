#include "program_launch.hpp"

#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iterator>
#include <optional>
#include <system_error>
#include <utility>

#include "service_pid_variables.hpp"

namespace tcptune::cli {

namespace fs = std::filesystem;

namespace {

pid_t g_child = -1;
// The child as a pidfd: once it is reaped (a supervisor reaps it while descendants it left
// still run), a signal goes nowhere rather than to a process that reused its pid.
int g_child_pidfd = -1;
void forward_signal(int signal_number) {
  const int saved_errno = errno;
  if (g_child_pidfd >= 0) {
    (void)syscall(SYS_pidfd_send_signal, g_child_pidfd, signal_number, nullptr, 0);
  } else if (g_child > 0) {
    kill(g_child, signal_number);
  }
  errno = saved_errno;
}

// The signals tcptune handles while the program runs, and what they were when tcptune started:
// the program gets those (nohup's ignored SIGHUP stays ignored; a second `ab` run does not
// inherit the SIGINT tcptune ignores for the first).
constexpr int kHandledSignals[] = {SIGINT, SIGQUIT, SIGTERM, SIGHUP, SIGUSR1, SIGUSR2};
// Those passed on to the program. SIGUSR1 and SIGUSR2 too: a service's `kill -USR1 $MAINPID`
// (reopen the logs) reaches tcptune run as its main process, and would otherwise end it.
constexpr int kForwardedSignals[] = {SIGTERM, SIGHUP, SIGUSR1, SIGUSR2};
struct sigaction g_original[sizeof kHandledSignals / sizeof kHandledSignals[0]];
bool g_original_saved = false;

}  // namespace

// libtcptune.so next to this binary: beside it (an image's /opt/tcptune), the build tree (bin/
// and lib/), or the installed layout (bin/ and TCPTUNE_SHIMDIR_FROM_BINDIR, cmake/InstallLayout.cmake).
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
       {dir / kShimFileName, dir / "../lib" / kShimFileName, dir / TCPTUNE_SHIMDIR_FROM_BINDIR / kShimFileName}) {
    if (fs::exists(candidate, error)) {
      return fs::weakly_canonical(candidate, error).string();
    }
  }
  return {};
}

std::string unpreloadable_path_problem(const std::string& shim) {
  if (shim.find_first_of(": ") == std::string::npos) {
    return {};
  }
  return "the shim's path " + shim +
         " has a ':' or a space, which LD_PRELOAD cannot hold (the loader splits it there): install tcptune under a "
         "path without them (tcptune install DIR copies it, with the shim, into DIR)";
}

std::string locate_preloadable_shim(std::string& problem) {
  std::string shim = locate_shim(problem);
  if (!shim.empty()) {
    problem = unpreloadable_path_problem(shim);
    if (!problem.empty()) {
      shim.clear();
    }
  }
  return shim;
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

namespace {

// ld.so separates LD_PRELOAD entries with colons or spaces; empty ones are skipped.
std::vector<std::string> preload_entries(const char* existing) {
  std::vector<std::string> entries;
  const std::string current = existing != nullptr ? existing : "";
  std::size_t start = 0;
  while (start < current.size()) {
    const std::size_t end = current.find_first_of(": ", start);
    std::string entry = current.substr(start, end == std::string::npos ? std::string::npos : end - start);
    if (!entry.empty()) {
      entries.push_back(std::move(entry));
    }
    if (end == std::string::npos) {
      break;
    }
    start = end + 1;
  }
  return entries;
}

}  // namespace

// The shim goes first, once, so its hooks see every call before the other interposers.
std::string preload_with_shim_first(const std::string& shim, const char* existing) {
  std::string preload = shim;
  for (const std::string& entry : preload_entries(existing)) {
    std::error_code error;
    if (entry != shim && fs::weakly_canonical(entry, error).string() != shim) {
      preload += ":" + entry;
    }
  }
  return preload;
}

std::optional<std::string> preload_without_shim(const char* existing) {
  std::string preload;
  bool removed = false;
  for (const std::string& entry : preload_entries(existing)) {
    if (fs::path(entry).filename() == kShimFileName) {
      removed = true;
    } else {
      preload += (preload.empty() ? "" : ":") + entry;
    }
  }
  return removed ? std::optional<std::string>(preload) : std::nullopt;
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

int wait_for_exit(pid_t child) {
  int status = 0;
  while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  return status;
}

// CMD as a child, so that its summary can follow. Like a shell running a foreground job,
// tcptune ignores the terminal's SIGINT/SIGQUIT (the child gets them too) and passes SIGTERM,
// SIGHUP, SIGUSR1 and SIGUSR2 on. They are blocked from before the fork until the handlers are in place, so a
// SIGTERM that comes at once is passed on too, not the end of tcptune with the program left.
int run_child(const std::string& resolved, std::vector<char*>& argv, const ChildHooks& hooks) {
  const std::string command = argv[0];
  sigset_t handled;
  sigset_t previous_mask;
  sigemptyset(&handled);
  for (std::size_t i = 0; i < std::size(kHandledSignals); ++i) {
    sigaddset(&handled, kHandledSignals[i]);
    if (!g_original_saved) {
      (void)sigaction(kHandledSignals[i], nullptr, &g_original[i]);
    }
  }
  g_original_saved = true;
  (void)pthread_sigmask(SIG_BLOCK, &handled, &previous_mask);
  if (g_child_pidfd >= 0) {
    (void)close(g_child_pidfd);  // an earlier run's (ab)
    g_child_pidfd = -1;
  }
  // LISTEN_PID and WATCHDOG_PID that name tcptune (systemd started it) will name the program.
  ServicePidVariables pid_variables;
  pid_variables.prepare();
  g_child = fork();
  if (g_child < 0) {
    const int error = errno;
    (void)pthread_sigmask(SIG_SETMASK, &previous_mask, nullptr);
    (void)std::fprintf(stderr, "tcptune run: fork: %s\n", std::generic_category().message(error).c_str());
    return W_EXITCODE(1, 0);
  }
  if (g_child == 0) {
    for (std::size_t i = 0; i < std::size(kHandledSignals); ++i) {
      (void)sigaction(kHandledSignals[i], &g_original[i], nullptr);
    }
    (void)pthread_sigmask(SIG_SETMASK, &previous_mask, nullptr);
    pid_variables.retarget_in_child();
    if (hooks.before_exec) {
      hooks.before_exec();
    }
    _exit(exec_command(resolved, command, argv));
  }
  g_child_pidfd = static_cast<int>(syscall(SYS_pidfd_open, g_child, 0));  // -1 before 5.3: kill by pid
  (void)std::signal(SIGINT, SIG_IGN);
  (void)std::signal(SIGQUIT, SIG_IGN);
  for (const int forwarded : kForwardedSignals) {
    (void)std::signal(forwarded, forward_signal);
  }
  (void)pthread_sigmask(SIG_SETMASK, &previous_mask, nullptr);
  return hooks.wait ? hooks.wait(g_child) : wait_for_exit(g_child);
}

}  // namespace tcptune::cli
