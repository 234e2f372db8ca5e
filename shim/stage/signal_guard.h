/* Whether this thread is inside one of the program's signal handlers, before the core is
   loaded: the core is never loaded from inside one (dlopen is not async-signal-safe; a handler
   that interrupted malloc would deadlock), and a TCP socket set up there goes untuned, as the
   core leaves such sockets. The same scheme as shim/core/signal_context: under glibc the
   program's handlers run behind a trampoline that the sigaction() and signal() hooks install,
   which notes each handler's frame; a handler left by siglongjmp is noticed from the stack
   pointer and the signal mask. Under another libc, where the core never loads, handlers are
   installed as they are. Once the core is attached, it takes these handlers over. */
#ifndef TCPTUNE_STAGE_SIGNAL_GUARD_H
#define TCPTUNE_STAGE_SIGNAL_GUARD_H

#include <signal.h>
#include <stdbool.h>

#pragma GCC visibility push(hidden)
bool stage_in_signal_handler(void);
/* The sigaction() and signal() hooks until the core is attached. */
int stage_sigaction(int signal_number, const struct sigaction* action, struct sigaction* old);
sighandler_t stage_signal(int signal_number, sighandler_t handler);
/* For the core's adoption: `installed`, as the kernel holds it, with the program's own handler
   and flags in place of the stage's trampoline. */
void stage_app_view_of_handler(int signal_number, struct sigaction* installed);
#pragma GCC visibility pop

#endif
