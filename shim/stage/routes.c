#include "routes.h"

#include <errno.h>

#include "dl_functions.h"
#include "next_fallbacks.h"
#include "signal_guard.h"
#include "triggers.h"

/* Zero (resolve on first use) but for the triggers and the signal guard's hooks. */
stage_function stage_routes[stage_hook_count] = {
    [stage_hook_sigaction] = (stage_function)stage_sigaction,
    [stage_hook_signal] = (stage_function)stage_signal,
    [stage_hook_socket] = (stage_function)stage_trigger_socket,
    [stage_hook_connect] = (stage_function)stage_trigger_connect,
    [stage_hook_listen] = (stage_function)stage_trigger_listen,
    [stage_hook_accept] = (stage_function)stage_trigger_accept,
    [stage_hook_accept4] = (stage_function)stage_trigger_accept4,
    [stage_hook_setsockopt] = (stage_function)stage_trigger_setsockopt,
    [stage_hook_recvmsg] = (stage_function)stage_trigger_recvmsg,
};

static const char* const hook_names[stage_hook_count] = {
#define TCPTUNE_HOOK_NEXT(name, fallback) [stage_hook_##name] = #name,
#include "hook_table.def"
};

static const stage_function fallbacks[stage_hook_count] = {
#define TCPTUNE_HOOK_NEXT(name, fallback) [stage_hook_##name] = (stage_function)(fallback),
#include "hook_table.def"
};

static stage_function g_next[stage_hook_count];

void* stage_next_symbol(const char* name) {
  const struct stage_dl_functions* dl = stage_dl();
  if (dl == NULL) {
    return NULL;
  }
  const int saved_errno = errno;
  void* symbol = dl->dlsym(RTLD_NEXT, name);
  errno = saved_errno;
  return symbol;
}

stage_function stage_next(enum stage_hook hook) {
  stage_function next = __atomic_load_n(&g_next[hook], __ATOMIC_ACQUIRE);
  if (__builtin_expect(next == NULL, 0)) {
    /* POSIX's dlsym returns functions as void*; ISO C has no such conversion. */
    next = __extension__(stage_function) stage_next_symbol(hook_names[hook]);
    if (next == NULL) {
      if (stage_dl() == NULL) {
        return fallbacks[hook]; /* for this call: dlsym may be found later (dl_functions.h) */
      }
      next = fallbacks[hook];
    }
    /* Racing threads store the same pointer. */
    __atomic_store_n(&g_next[hook], next, __ATOMIC_RELEASE);
  }
  return next;
}

stage_function stage_route_to_next(enum stage_hook hook) {
  stage_function next = stage_next(hook);
  stage_function expected = NULL;
  if (!__atomic_compare_exchange_n(&stage_routes[hook], &expected, next, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
    return expected; /* the core's entry, set meanwhile */
  }
  return next;
}

void stage_route_to_core(const struct tcptune_core_entries* core) {
/* NOLINTNEXTLINE(bugprone-macro-parentheses): a member name */
#define TCPTUNE_HOOK_NEXT(name, fallback) \
  __atomic_store_n(&stage_routes[stage_hook_##name], (stage_function)core->name, __ATOMIC_RELEASE);
#include "hook_table.def"
}

void stage_route_triggers_to_next(void) {
  static const enum stage_hook triggers[] = {stage_hook_socket, stage_hook_connect, stage_hook_listen,
                                             stage_hook_accept, stage_hook_accept4, stage_hook_setsockopt,
                                             stage_hook_recvmsg};
  for (size_t i = 0; i < sizeof triggers / sizeof triggers[0]; ++i) {
    __atomic_store_n(&stage_routes[triggers[i]], stage_next(triggers[i]), __ATOMIC_RELEASE);
  }
}
