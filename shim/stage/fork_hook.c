/* The exported fork(): in a process that may have several threads and whose core is not loaded
   yet, the core is loaded first, then libc's fork runs. A child forked while another thread of
   its parent is inside the dynamic loader (dlopen, dlclose, dl_iterate_phdr: a JIT, a profiler,
   plugins) inherits the loader's lock held (glibc 2.36 does not reset it in the child), and its
   one thread would wait for it forever on its first TCP socket, where the core is loaded. With
   the core loaded before the fork, the child never needs the loader for it. A process that has
   only ever had one thread (a shell) has no other thread inside the loader: its forks load
   nothing. */
#include <stdbool.h>
#include <stddef.h>
#include <unistd.h>

#include "core_loader.h"
#include "loaded_symbols.h"
#include "next_fallbacks.h"
#include "routes.h"
#include "signal_guard.h"

typedef pid_t fork_function(void);

static fork_function* g_next_fork;

/* glibc 2.32's __libc_single_threaded: nonzero while the process has never had a second
   thread. Asked once, from the loaded objects' own tables (no dl function, so a shell's fork
   loads nothing); where it cannot be had (an older glibc, musl: no core either), the process
   is taken as one thread, as before this hook. */
static const char* single_threaded_flag(void) {
  static const char* flag;
  static int asked;
  if (__atomic_load_n(&asked, __ATOMIC_ACQUIRE) != 0) {
    return __atomic_load_n(&flag, __ATOMIC_ACQUIRE);
  }
  const char* found = stage_loaded_object("__libc_single_threaded");
  __atomic_store_n(&flag, found, __ATOMIC_RELEASE);
  __atomic_store_n(&asked, 1, __ATOMIC_RELEASE);
  return found;
}

static bool may_have_other_threads(void) {
  const char* flag = single_threaded_flag();
  return flag != NULL && __atomic_load_n(flag, __ATOMIC_RELAXED) == 0;
}

TCPTUNE_HOOK pid_t fork(void) {
  if (stage_core_if_attached() == NULL && !stage_in_signal_handler() && may_have_other_threads()) {
    (void)stage_core(); /* a core that cannot load says so once, and the fork goes on untuned */
  }
  fork_function* next = __atomic_load_n(&g_next_fork, __ATOMIC_ACQUIRE);
  if (next == NULL) {
    next = __extension__(fork_function*) stage_next_symbol("fork");
    if (next == NULL) {
      return unresolved_fork();
    }
    __atomic_store_n(&g_next_fork, next, __ATOMIC_RELEASE);
  }
  return next();
}
