/* Where each hook of the first stage goes: one pointer per hook, read with one load. It holds
   libc's next definition (resolved on first use), or for the calls that can bring the first
   TCP socket the stage's check before the core (triggers.h), for sigaction and signal the
   stage's trampoline (signal_guard.h), or once the core is attached the core's entry. */
#ifndef TCPTUNE_STAGE_ROUTES_H
#define TCPTUNE_STAGE_ROUTES_H

#include <stddef.h>

#include "core_interface.h"

#pragma GCC visibility push(hidden)

/* Any function, as routes store them; called only through a cast back to its own type. */
typedef void (*stage_function)(void);

enum stage_hook {
#define TCPTUNE_HOOK_NEXT(name, fallback) stage_hook_##name,
#include "hook_table.def"
  stage_hook_count
};

extern stage_function stage_routes[stage_hook_count];

/* libc's next definition of the hook's function, or its fallback (next_fallbacks.h) when
   dlsym finds none: resolved once, lock-free; async-signal-safe once resolved; errno kept. */
stage_function stage_next(enum stage_hook hook);
/* A route still empty: libc's next definition, stored unless another route was set meanwhile. */
stage_function stage_route_to_next(enum stage_hook hook);
/* Every route to the core's entry for it. */
void stage_route_to_core(const struct tcptune_core_entries* core);
/* The triggers' routes to libc's next definitions: the core will not be loaded. */
void stage_route_triggers_to_next(void);
/* The resolver the core is given: dlsym(RTLD_NEXT) from here, after libtcptune.so. */
void* stage_next_symbol(const char* name);

static inline stage_function stage_route(enum stage_hook hook) {
  stage_function route = __atomic_load_n(&stage_routes[hook], __ATOMIC_ACQUIRE);
  if (__builtin_expect(route == NULL, 0)) {
    route = stage_route_to_next(hook);
  }
  return route;
}

/* STAGE_ROUTE(write)(fd, buf, n): the call where write's route goes now; STAGE_NEXT(write):
   straight to libc's. The argument is a name, pasted and declared: no parentheses. */
/* NOLINTBEGIN(bugprone-macro-parentheses) */
#define STAGE_ROUTE(name) ((__typeof__(&name))stage_route(stage_hook_##name))
#define STAGE_NEXT(name) ((__typeof__(&name))stage_next(stage_hook_##name))
/* NOLINTEND(bugprone-macro-parentheses) */

#pragma GCC visibility pop

#endif
