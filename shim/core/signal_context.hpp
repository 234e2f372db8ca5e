// Whether the calling thread is inside one of the app's signal handlers. Setting a socket up
// formats log lines and allocates; from inside a handler that interrupted malloc (or the
// shim's own log) that would deadlock or corrupt the heap, so hooks called there do only what
// is async-signal-safe and leave the socket untuned. The shim knows because the app's handlers
// run behind a trampoline it installs through the sigaction()/signal() hooks, which counts
// handler depth per thread. A handler left by siglongjmp is noticed from the stack pointer.
// Handlers installed with raw system calls are not seen (such a program is treated as if no
// handler were running).
#pragma once

#include <signal.h>

namespace tcptune::shim {

[[nodiscard]] bool in_signal_handler() noexcept;

// sigaction() as the app sees it, through the next sigaction(): `act`'s handler is installed
// behind the trampoline and `old` reports the app's own handler, never the trampoline.
// Pointers are read and written as the kernel would (a bad one gives EFAULT).
int app_sigaction(int signal_number, const struct sigaction* act, struct sigaction* old) noexcept;

// The handlers installed before the core was loaded (behind the first stage's trampoline, or
// through libc): each is installed again behind this one, with its own flags and mask, so
// in_signal_handler() sees it. `app_view` puts the program's handler in place of the stage's.
void adopt_installed_handlers(void (*app_view)(int signal_number, struct sigaction* installed)) noexcept;

// Sockets the app set up from inside its signal handlers, left untuned (for the summary).
[[nodiscard]] unsigned long untuned_in_signal_handlers() noexcept;
void count_untuned_in_signal_handler() noexcept;
// In a fork child: the parent's count is the parent's to report.
void forget_untuned_in_child() noexcept;

}  // namespace tcptune::shim
