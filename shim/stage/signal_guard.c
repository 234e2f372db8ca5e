#include "signal_guard.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core_loader.h"
#include "routes.h"

/* The program's handler for each signal, as it last installed it. */
struct app_handler {
  void* handler;
  int flags;
};
static struct app_handler g_handlers[_NSIG];

/* Per thread: how many of the program's handlers are running, and where each one's
   trampoline frame is. */
enum { kTrackedDepth = 8 };
struct handler_frame {
  uintptr_t frame;
  int signal_number;
  bool on_alternate_stack;
  bool masks_itself; /* no SA_NODEFER: the signal stays blocked while its handler runs */
};
static _Thread_local int t_depth;
static _Thread_local struct handler_frame t_frames[kTrackedDepth];

static bool running_on_alternate_stack(void) {
  stack_t stack;
  memset(&stack, 0, sizeof stack);
  const int saved_errno = errno;
  const bool on = syscall(SYS_sigaltstack, NULL, &stack) == 0 && (stack.ss_flags & SS_ONSTACK) != 0;
  errno = saved_errno;
  return on;
}

static bool signal_blocked(int signal_number) {
  uint64_t mask = 0;
  const int saved_errno = errno;
  const long result = syscall(SYS_rt_sigprocmask, SIG_BLOCK, NULL, &mask, sizeof mask);
  errno = saved_errno;
  return result != 0 || (mask & (UINT64_C(1) << (signal_number - 1))) != 0;
}

static void trampoline(int signal_number, siginfo_t* info, void* context) {
  void* handler = __atomic_load_n(&g_handlers[signal_number].handler, __ATOMIC_ACQUIRE);
  const int flags = __atomic_load_n(&g_handlers[signal_number].flags, __ATOMIC_RELAXED);
  if (t_depth < kTrackedDepth) {
    struct handler_frame* frame = &t_frames[t_depth];
    frame->frame = (uintptr_t)__builtin_frame_address(0);
    frame->signal_number = signal_number;
    frame->on_alternate_stack = (flags & SA_ONSTACK) != 0 && running_on_alternate_stack();
    frame->masks_itself = (flags & SA_NODEFER) == 0;
  }
  ++t_depth;
  /* With all three arguments, as the kernel calls a handler: a one-argument handler ignores
     the others. */
  (__extension__(void (*)(int, siginfo_t*, void*)) handler)(signal_number, info, context);
  --t_depth;
}

bool stage_in_signal_handler(void) {
  while (t_depth > 0) {
    if (t_depth > kTrackedDepth) {
      return true; /* deeper than tracked: assume still inside */
    }
    const struct handler_frame* innermost = &t_frames[t_depth - 1];
    bool inside = innermost->on_alternate_stack ? running_on_alternate_stack()
                                                : (uintptr_t)__builtin_frame_address(0) < innermost->frame;
    if (inside && innermost->masks_itself) {
      /* After siglongjmp the stack may grow deeper than the handler's frame was, but the mask
         sigsetjmp saved is back: a handler still running keeps its own signal blocked. */
      inside = signal_blocked(innermost->signal_number);
    }
    if (inside) {
      return true;
    }
    --t_depth; /* that handler was left by siglongjmp */
  }
  return false;
}

static bool is_function(const struct sigaction* action) {
  return action->sa_handler != SIG_DFL && action->sa_handler != SIG_IGN;
}

/* As shim/core/signal_context.cpp's app_sigaction: `action`'s handler goes behind the
   trampoline, `old` reports the program's own handler, never the trampoline. `action` and `old`
   are read and written directly, as glibc's sigaction does (a bad pointer faults there too):
   no system call is added, and shells call this around every fork. */
int stage_sigaction(int signal_number, const struct sigaction* action, struct sigaction* old) {
  if (signal_number <= 0 || signal_number >= _NSIG || !stage_running_on_glibc()) {
    return STAGE_NEXT(sigaction)(signal_number, action, old); /* EINVAL; or not glibc */
  }
  struct sigaction installed;
  if (action != NULL) {
    installed = *action;
  }
  struct app_handler* app = &g_handlers[signal_number];
  void* previous_handler = __atomic_load_n(&app->handler, __ATOMIC_ACQUIRE);
  const int previous_flags = __atomic_load_n(&app->flags, __ATOMIC_RELAXED);
  if (action != NULL && is_function(&installed)) {
    /* Published before the kernel switches to the trampoline, so it never runs without it. */
    __atomic_store_n(&app->flags, installed.sa_flags, __ATOMIC_RELAXED);
    __atomic_store_n(&app->handler, __extension__(void*) installed.sa_sigaction, __ATOMIC_RELEASE);
    installed.sa_sigaction = trampoline;
    installed.sa_flags |= SA_SIGINFO;
  }
  const int result = STAGE_NEXT(sigaction)(signal_number, action != NULL ? &installed : NULL, old);
  if (result != 0) {
    __atomic_store_n(&app->flags, previous_flags, __ATOMIC_RELAXED);
    __atomic_store_n(&app->handler, previous_handler, __ATOMIC_RELEASE);
    return result;
  }
  if (old != NULL && old->sa_sigaction == trampoline) {
    old->sa_sigaction = __extension__(void (*)(int, siginfo_t*, void*)) previous_handler;
    old->sa_flags = previous_flags;
  }
  return 0;
}

/* glibc's signal(): BSD semantics (the signal blocked while its handler runs, SA_RESTART). */
sighandler_t stage_signal(int signal_number, sighandler_t handler) {
  if (!stage_running_on_glibc()) {
    return STAGE_NEXT(signal)(signal_number, handler);
  }
  struct sigaction action;
  memset(&action, 0, sizeof action);
  action.sa_handler = handler;
  if (signal_number > 0 && signal_number < _NSIG) {
    (void)sigaddset(&action.sa_mask, signal_number);
  }
  action.sa_flags = SA_RESTART;
  struct sigaction old;
  memset(&old, 0, sizeof old);
  if (stage_sigaction(signal_number, &action, &old) != 0) {
    return SIG_ERR;
  }
  return old.sa_handler;
}

void stage_app_view_of_handler(int signal_number, struct sigaction* installed) {
  if (signal_number <= 0 || signal_number >= _NSIG || installed->sa_sigaction != trampoline) {
    return;
  }
  installed->sa_sigaction = __extension__(void (*)(int, siginfo_t*, void*))
      __atomic_load_n(&g_handlers[signal_number].handler, __ATOMIC_ACQUIRE);
  installed->sa_flags = __atomic_load_n(&g_handlers[signal_number].flags, __ATOMIC_RELAXED);
}
