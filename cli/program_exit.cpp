#include "program_exit.hpp"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include <csignal>
#include <cstdio>

namespace tcptune::cli {

namespace {

// A program can be killed only by a signal whose default action ends the process; the others
// (SIGCHLD, SIGCONT, SIGURG, SIGWINCH and the stop signals) are listed for completeness.
bool ends_process_by_default(int signal_number) {
  switch (signal_number) {
    case SIGCHLD:
    case SIGCONT:
    case SIGURG:
    case SIGWINCH:
    case SIGSTOP:
    case SIGTSTP:
    case SIGTTIN:
    case SIGTTOU: return false;
    default: return true;
  }
}

}  // namespace

int shell_exit_status(int wait_status) {
  if (WIFSIGNALED(wait_status)) {
    return 128 + WTERMSIG(wait_status);
  }
  return WIFEXITED(wait_status) ? WEXITSTATUS(wait_status) : 1;
}

int end_as_program(int wait_status) {
  if (!WIFSIGNALED(wait_status)) {
    return shell_exit_status(wait_status);
  }
  const int signal_number = WTERMSIG(wait_status);
  if (!ends_process_by_default(signal_number)) {
    return 128 + signal_number;
  }
  (void)std::signal(SIGPIPE, SIG_IGN);  // a reader gone from stdout must not pick the signal
  (void)std::fflush(nullptr);
  // No core of tcptune for the program's SIGSEGV or SIGABRT: RLIMIT_CORE 0 stops a core file,
  // and not being dumpable also stops a core_pattern that pipes to a handler (the kernel
  // ignores RLIMIT_CORE for those).
  rlimit core{};
  if (getrlimit(RLIMIT_CORE, &core) == 0) {
    core.rlim_cur = 0;
    (void)setrlimit(RLIMIT_CORE, &core);
  }
  (void)prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
  struct sigaction default_action {};
  default_action.sa_handler = SIG_DFL;
  sigemptyset(&default_action.sa_mask);
  (void)sigaction(signal_number, &default_action, nullptr);
  sigset_t only_this;
  sigemptyset(&only_this);
  sigaddset(&only_this, signal_number);
  (void)pthread_sigmask(SIG_UNBLOCK, &only_this, nullptr);
  (void)raise(signal_number);
  return 128 + signal_number;  // not reached for a signal that ends a process
}

}  // namespace tcptune::cli
