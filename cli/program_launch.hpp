// Starting a program under the shim: where libtcptune.so is, LD_PRELOAD with the shim first,
// the command looked up as execvp would, and run as an exec or as a child (run and ab).
#pragma once

#include <sys/types.h>

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace tcptune::cli {

// libtcptune.so next to this binary (build or install tree), or TCPTUNE_SHIM, which must be a
// file. Empty with the reason in `problem` when not found.
std::string locate_shim(std::string& problem);
// Like execvp's search: the path CMD will run from, or empty. `found_not_executable` is set
// when only a non-executable file of that name was found (the shell's 126, not 127).
std::string resolve_command(const std::string& command, bool& found_not_executable);
std::string absolute(const std::string& path);
inline constexpr const char* kShimFileName = "libtcptune.so";
// ld.so separates LD_PRELOAD entries with colons or spaces, so a path that has one cannot be
// preloaded: why (naming the way out), or empty when `shim` can be.
std::string unpreloadable_path_problem(const std::string& shim);
// The shim as locate_shim finds it, when LD_PRELOAD can hold its path; otherwise empty, with why.
std::string locate_preloadable_shim(std::string& problem);
// The shim goes first, once, so
// its hooks see every call before the other interposers.
std::string preload_with_shim_first(const std::string& shim, const char* existing);
// LD_PRELOAD without any file named libtcptune.so (colon-separated), for a program whose loader
// is not glibc's: the shim preloaded there would stop it before main. Nothing if it has none.
std::optional<std::string> preload_without_shim(const char* existing);
// execv, and /bin/sh for a script without "#!"; returns the exit status if it cannot.
int exec_command(const std::string& resolved, const std::string& command, std::vector<char*>& argv);
// waitpid for `child` through EINTR; its wait status.
int wait_for_exit(pid_t child);

// `before_exec` runs in the child, `wait` in the parent instead of waitpid (it returns the wait
// status), for supervision.
struct ChildHooks {
  std::function<void()> before_exec;
  std::function<int(pid_t child)> wait;
};
// CMD as a child, as a shell runs a foreground job: the terminal's SIGINT/SIGQUIT are ignored
// here (the child gets them too), SIGTERM, SIGHUP, SIGUSR1 and SIGUSR2 are passed on. LISTEN_PID
// and WATCHDOG_PID naming tcptune name the child in its environment (service_pid_variables.hpp). Returns the child's
// wait status (end_as_program, program_exit.hpp, ends tcptune the same way); exit status 1 if it cannot fork.
int run_child(const std::string& resolved, std::vector<char*>& argv, const ChildHooks& hooks = {});

}  // namespace tcptune::cli
