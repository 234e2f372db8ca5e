#include "dl_functions.h"

#include <errno.h>
#include <limits.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "loaded_symbols.h"

/* glibc's private entry points, as glibc 2.0 to 2.33 define them (elf/dl-libc.c). */
typedef void* libc_dlopen_mode_function(const char* name, int mode);
typedef void* libc_dlsym_function(void* map, const char* name);

/* glibc's internal __RTLD_DLOPEN (0x80000000), which its own __libc_dlopen adds: the object
   is counted as dlopen'ed. */
enum { kRtldDlopen = INT_MIN };

enum dl_state { dl_unknown, dl_finding, dl_found, dl_missing };

static int g_state = dl_unknown;
static struct stage_dl_functions g_found;
/* Who is finding them: a call from inside gets NULL; a child forked meanwhile starts again. */
static long g_finder_process;
static long g_finder_thread;

/* Finding them takes microseconds, loading libdl.so.2 about a millisecond; past this, a caller
   stops waiting rather than wait on a thread blocked on a lock it holds. */
enum { kLongestWaitNs = 2000000000 };

static long monotonic_ns(void) {
  struct timespec now = {0, 0};
  (void)syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &now);
  return now.tv_sec * 1000000000L + now.tv_nsec;
}

static bool complete(const struct stage_dl_functions* functions) {
  return functions->dlsym != NULL && functions->dlopen != NULL && functions->dladdr != NULL &&
         functions->dlerror != NULL;
}

bool stage_dl_find_loaded(struct stage_dl_functions* functions) {
  /* POSIX's dlsym returns functions as void*; ISO C has no such conversion. */
  struct stage_dl_functions found;
  found.dlsym = __extension__(__typeof__(found.dlsym)) stage_loaded_function("dlsym");
  found.dlopen = __extension__(__typeof__(found.dlopen)) stage_loaded_function("dlopen");
  found.dladdr = __extension__(__typeof__(found.dladdr)) stage_loaded_function("dladdr");
  found.dlerror = __extension__(__typeof__(found.dlerror)) stage_loaded_function("dlerror");
  if (!complete(&found)) {
    return false;
  }
  *functions = found;
  return true;
}

bool stage_dl_load_privately(struct stage_dl_functions* functions) {
  libc_dlopen_mode_function* open_mode =
      __extension__(libc_dlopen_mode_function*) stage_loaded_function("__libc_dlopen_mode");
  libc_dlsym_function* lookup = __extension__(libc_dlsym_function*) stage_loaded_function("__libc_dlsym");
  if (open_mode == NULL || lookup == NULL) {
    return false;
  }
  void* libdl = open_mode("libdl.so.2", RTLD_LAZY | RTLD_NODELETE | kRtldDlopen);
  if (libdl == NULL) {
    return false;
  }
  struct stage_dl_functions found;
  found.dlsym = __extension__(__typeof__(found.dlsym)) lookup(libdl, "dlsym");
  found.dlopen = __extension__(__typeof__(found.dlopen)) lookup(libdl, "dlopen");
  found.dladdr = __extension__(__typeof__(found.dladdr)) lookup(libdl, "dladdr");
  found.dlerror = __extension__(__typeof__(found.dlerror)) lookup(libdl, "dlerror");
  if (!complete(&found)) {
    return false;
  }
  *functions = found;
  return true;
}

static const struct stage_dl_functions* wait_for_finder(void) {
  const long process = syscall(SYS_getpid);
  if (__atomic_load_n(&g_finder_process, __ATOMIC_ACQUIRE) == process &&
      __atomic_load_n(&g_finder_thread, __ATOMIC_ACQUIRE) == syscall(SYS_gettid)) {
    return NULL; /* called from inside */
  }
  const long deadline = monotonic_ns() + kLongestWaitNs;
  while (__atomic_load_n(&g_state, __ATOMIC_ACQUIRE) == dl_finding) {
    const long finder = __atomic_load_n(&g_finder_process, __ATOMIC_ACQUIRE);
    if (finder != 0 && finder != process) {
      /* Forked while a thread of the parent was finding them: this process starts again. */
      int expected = dl_finding;
      (void)__atomic_compare_exchange_n(&g_state, &expected, dl_unknown, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
      return stage_dl();
    }
    if (monotonic_ns() > deadline) {
      return NULL;
    }
    (void)syscall(SYS_sched_yield);
  }
  return __atomic_load_n(&g_state, __ATOMIC_ACQUIRE) == dl_found ? &g_found : NULL;
}

const struct stage_dl_functions* stage_dl(void) {
  int expected = __atomic_load_n(&g_state, __ATOMIC_ACQUIRE);
  if (__builtin_expect(expected == dl_found, 1)) {
    return &g_found;
  }
  if (expected != dl_unknown ||
      !__atomic_compare_exchange_n(&g_state, &expected, dl_finding, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
    if (expected == dl_found) {
      return &g_found;
    }
    return expected == dl_finding ? wait_for_finder() : NULL;
  }
  __atomic_store_n(&g_finder_thread, syscall(SYS_gettid), __ATOMIC_RELEASE);
  __atomic_store_n(&g_finder_process, syscall(SYS_getpid), __ATOMIC_RELEASE);
  const int saved_errno = errno;
  const bool found = stage_dl_find_loaded(&g_found) || stage_dl_load_privately(&g_found);
  errno = saved_errno;
  __atomic_store_n(&g_state, found ? dl_found : dl_missing, __ATOMIC_RELEASE);
  return found ? &g_found : NULL;
}
