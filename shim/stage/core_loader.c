#include "core_loader.h"

#include <errno.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "dl_functions.h"
#include "loaded_symbols.h"
#include "routes.h"
#include "signal_guard.h"

enum core_state { core_unloaded, core_loading, core_attached, core_unavailable };
enum libc_kind { libc_unknown, libc_glibc, libc_other };

static int g_state = core_unloaded;
static int g_libc = libc_unknown;
static const struct tcptune_core_entries* g_entries;
/* Who is loading it: a hook that this load calls itself goes on to libc; a child forked
   meanwhile does not wait for a thread it does not have. */
static long g_loader_process;
static long g_loader_thread;

/* Another thread's load takes milliseconds. Past this, a thread stops waiting and its call goes
   on untuned, rather than wait forever on a loader blocked on a lock it holds (the dynamic
   loader's, when it is itself inside a library constructor). */
enum { kLongestWaitNs = 2000000000 };

static const struct tcptune_stage_services services = {TCPTUNE_CORE_INTERFACE_VERSION, stage_next_symbol,
                                                       stage_app_view_of_handler};

static long this_process(void) {
  return syscall(SYS_getpid);
}

static long this_thread(void) {
  return syscall(SYS_gettid);
}

static long monotonic_ns(void) {
  struct timespec now = {0, 0};
  (void)syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &now);
  return now.tv_sec * 1000000000L + now.tv_nsec;
}

/* One line on stderr, in one write: "tcptune: <parts>; running untuned". */
static void say(const char* first, const char* second) {
  static const char prefix[] = "tcptune: ";
  static const char suffix[] = "; running untuned\n";
  char line[1024];
  size_t used = 0;
  const char* parts[] = {prefix, first, second};
  for (size_t i = 0; i < sizeof parts / sizeof parts[0]; ++i) {
    if (parts[i] == NULL) {
      continue;
    }
    const size_t room = sizeof line - sizeof suffix - used;
    const size_t length = strlen(parts[i]);
    memcpy(line + used, parts[i], length < room ? length : room);
    used += length < room ? length : room;
  }
  memcpy(line + used, suffix, sizeof suffix - 1);
  used += sizeof suffix - 1;
  (void)syscall(SYS_write, 2, line, used);
}

/* The core is named after the first stage, beside it: DIR/libtcptune.so -> DIR/libtcptune-core.so. */
static bool core_path(const struct stage_dl_functions* dl, char* path, size_t size) {
  Dl_info info;
  if (dl->dladdr(&g_state, &info) == 0 || info.dli_fname == NULL) {
    return false;
  }
  static const char core_suffix[] = "-core.so";
  const char* stage = info.dli_fname;
  size_t stem = strlen(stage);
  if (stem >= 3 && strcmp(stage + stem - 3, ".so") == 0) {
    stem -= 3;
  }
  if (stem + sizeof core_suffix > size) {
    return false;
  }
  memcpy(path, stage, stem); /* NOLINT(bugprone-not-null-terminated-result): the suffix brings the NUL */
  memcpy(path + stem, core_suffix, sizeof core_suffix);
  return true;
}

static const struct tcptune_core_entries* load_and_attach(void) {
  const struct stage_dl_functions* dl = stage_dl();
  if (dl == NULL) {
    say("cannot load the tuning core: the dynamic loader's dlopen was not found", NULL);
    return NULL;
  }
  char path[4096];
  if (!core_path(dl, path, sizeof path)) {
    say("cannot tell where libtcptune.so was loaded from, to load the tuning core beside it", NULL);
    return NULL;
  }
  void* core = dl->dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
  if (core == NULL) {
    say("cannot load the tuning core: ", dl->dlerror());
    return NULL;
  }
  tcptune_core_attach_function* attach =
      __extension__(tcptune_core_attach_function*) dl->dlsym(core, TCPTUNE_CORE_ATTACH_SYMBOL);
  if (attach == NULL) {
    say("cannot attach the tuning core: ", dl->dlerror());
    return NULL;
  }
  const struct tcptune_core_entries* entries = attach(&services);
  if (entries == NULL) {
    say(path, " is the tuning core of another libtcptune.so");
  }
  return entries;
}

/* The state a load ended in, for every thread: routes first, so that a thread seeing
   "attached" calls the core. */
static void finish_load(const struct tcptune_core_entries* entries) {
  if (entries != NULL) {
    __atomic_store_n(&g_entries, entries, __ATOMIC_RELEASE);
    stage_route_to_core(entries);
    __atomic_store_n(&g_state, core_attached, __ATOMIC_RELEASE);
  } else {
    stage_route_triggers_to_next();
    __atomic_store_n(&g_state, core_unavailable, __ATOMIC_RELEASE);
  }
}

static const struct tcptune_core_entries* wait_for_loader(void) {
  if (__atomic_load_n(&g_loader_process, __ATOMIC_ACQUIRE) == this_process() &&
      __atomic_load_n(&g_loader_thread, __ATOMIC_ACQUIRE) == this_thread()) {
    return NULL; /* called from inside the load */
  }
  const long deadline = monotonic_ns() + kLongestWaitNs;
  while (__atomic_load_n(&g_state, __ATOMIC_ACQUIRE) == core_loading) {
    const long loader = __atomic_load_n(&g_loader_process, __ATOMIC_ACQUIRE);
    if (loader != 0 && loader != this_process()) {
      /* Forked while a thread of the parent was loading it: half loaded here, never finished. */
      int expected = core_loading;
      if (__atomic_compare_exchange_n(&g_state, &expected, core_unavailable, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
        stage_route_triggers_to_next();
      }
      return NULL;
    }
    if (monotonic_ns() > deadline) {
      return NULL;
    }
    (void)syscall(SYS_sched_yield);
  }
  return __atomic_load_n(&g_state, __ATOMIC_ACQUIRE) == core_attached ? __atomic_load_n(&g_entries, __ATOMIC_ACQUIRE)
                                                                      : NULL;
}

bool stage_running_on_glibc(void) {
  int libc = __atomic_load_n(&g_libc, __ATOMIC_ACQUIRE);
  if (libc == libc_unknown) {
    /* A name only glibc defines. The core is built against glibc and never runs on another. */
    const int saved_errno = errno;
    libc = stage_loaded_function("gnu_get_libc_version") != NULL ? libc_glibc : libc_other;
    errno = saved_errno;
    __atomic_store_n(&g_libc, libc, __ATOMIC_RELEASE);
  }
  return libc == libc_glibc;
}

bool stage_core_possible(void) {
  const int state = __atomic_load_n(&g_state, __ATOMIC_ACQUIRE);
  if (state == core_attached) {
    return true;
  }
  if (state == core_unavailable) {
    return false;
  }
  if (!stage_running_on_glibc()) {
    int expected = core_unloaded;
    if (__atomic_compare_exchange_n(&g_state, &expected, core_unavailable, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
      stage_route_triggers_to_next();
    }
    return false;
  }
  return true;
}

static const struct tcptune_core_entries* load_or_wait(void) {
  /* Not from inside a signal handler, not even to wait for another thread's load: the code
     it interrupted may hold the lock that load needs. A later call outside loads it. */
  if (!stage_core_possible() || stage_in_signal_handler()) {
    return NULL;
  }
  int expected = core_unloaded;
  if (!__atomic_compare_exchange_n(&g_state, &expected, core_loading, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
    if (expected == core_attached) {
      return __atomic_load_n(&g_entries, __ATOMIC_ACQUIRE);
    }
    return expected == core_loading ? wait_for_loader() : NULL;
  }
  __atomic_store_n(&g_loader_thread, this_thread(), __ATOMIC_RELEASE);
  __atomic_store_n(&g_loader_process, this_process(), __ATOMIC_RELEASE);
  const struct tcptune_core_entries* entries = load_and_attach();
  finish_load(entries);
  return entries;
}

const struct tcptune_core_entries* stage_core_if_attached(void) {
  return __atomic_load_n(&g_state, __ATOMIC_ACQUIRE) == core_attached ? __atomic_load_n(&g_entries, __ATOMIC_ACQUIRE)
                                                                      : NULL;
}

const struct tcptune_core_entries* stage_core(void) {
  const struct tcptune_core_entries* entries = stage_core_if_attached();
  if (entries != NULL || __atomic_load_n(&g_state, __ATOMIC_ACQUIRE) == core_unavailable) {
    return entries;
  }
  const int saved_errno = errno;
  entries = load_or_wait();
  errno = saved_errno;
  return entries;
}
