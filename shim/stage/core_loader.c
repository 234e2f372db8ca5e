#include "core_loader.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stddef.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "dl_functions.h"
#include "loaded_symbols.h"
#include "routes.h"
#include "signal_guard.h"
#include "vfork_hook.h"

enum core_state { core_unloaded, core_loading, core_attached, core_unavailable };
enum libc_kind { libc_unknown, libc_glibc, libc_other };

static int g_state = core_unloaded;
static int g_libc = libc_unknown;
static const struct tcptune_core_entries* g_entries;
/* Who loads it (0: nobody yet; the process id is the claim): a hook that this load calls
   itself goes on to libc; a child forked meanwhile does not wait for a thread it does not have. */
static long g_loader_process;
static long g_loader_thread;

/* The descriptors a load needs at once, above an app that holds every number below its limit. */
enum { kLoadDescriptors = 4 };

/* Another thread's load takes milliseconds. Past this, a thread stops waiting and its call goes
   on untuned, rather than wait forever on a loader blocked on a lock it holds (the dynamic
   loader's, when it is itself inside a library constructor). */
enum { kLongestWaitNs = 2000000000 };

static const struct tcptune_stage_services services = {TCPTUNE_CORE_INTERFACE_VERSION, stage_next_symbol,
                                                       stage_app_view_of_handler, &stage_vforks_in_flight};

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

/* Whether fd 2 takes a line of tcptune's now, as the core's log on stderr judges it
   (shim/telemetry/stderr_stream.hpp): never into a network socket or an accepted unix
   connection (an inetd-style program's stderr is its connection, where the line would corrupt
   what it sends), and never blocking (a full pipe nobody reads would stop the program at its
   first TCP socket), nor into a pipe whose reader is gone (SIGPIPE). */
static bool stderr_takes_a_line(void) {
  struct stat info;
  if (syscall(SYS_fstat, 2, &info) != 0) {
    return false;
  }
  if (S_ISSOCK(info.st_mode)) {
    int domain = 0;
    socklen_t length = sizeof domain;
    struct sockaddr_un own;
    socklen_t own_length = sizeof own;
    if (syscall(SYS_getsockopt, 2, SOL_SOCKET, SO_DOMAIN, &domain, &length) != 0 || domain != AF_UNIX ||
        syscall(SYS_getsockname, 2, &own, &own_length) != 0 || own_length > offsetof(struct sockaddr_un, sun_path)) {
      return false;
    }
  }
  struct pollfd writable = {2, POLLOUT, 0};
  /* POLLERR: a pipe whose reader is gone, where the write would raise SIGPIPE. */
  return syscall(SYS_poll, &writable, 1UL, 0) == 1 && (writable.revents & (POLLOUT | POLLERR)) == POLLOUT;
}

/* One line on stderr, in one write: "tcptune: <parts>; running untuned". */
static void say(const char* first, const char* second) {
  const int saved_errno = errno;
  if (!stderr_takes_a_line()) {
    errno = saved_errno;
    return;
  }
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
  errno = saved_errno;
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

static const struct tcptune_core_entries* open_and_attach(const struct stage_dl_functions* dl, const char* path) {
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

/* Whether the app holds every number below its soft limit, and the hard limit leaves room. */
static bool numbers_all_taken(struct rlimit* limit) {
  const int fd = (int)syscall(SYS_openat, AT_FDCWD, "/", O_PATH | O_CLOEXEC);
  if (fd >= 0) {
    syscall(SYS_close, fd);
    return false;
  }
  return errno == EMFILE && getrlimit(RLIMIT_NOFILE, limit) == 0 && limit->rlim_cur < limit->rlim_max;
}

/* Loading opens the core's file, and attaching opens the log and reads a few /proc files: where
   the app holds every number below its soft limit, the limit is raised by a few for the load and
   put back after it. What the core keeps open (the log) sits at or above the old limit, out of
   the app's range (private_descriptor.hpp). A thread of the app opening during the load may get
   a number at or above the old limit, as after a setrlimit of its own. */
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
  struct rlimit limit;
  if (!numbers_all_taken(&limit)) {
    return open_and_attach(dl, path);
  }
  struct rlimit raised = limit;
  raised.rlim_cur = limit.rlim_max - limit.rlim_cur > kLoadDescriptors ? limit.rlim_cur + kLoadDescriptors : limit.rlim_max;
  const bool was_raised = setrlimit(RLIMIT_NOFILE, &raised) == 0;
  const struct tcptune_core_entries* entries = open_and_attach(dl, path);
  if (was_raised) {
    setrlimit(RLIMIT_NOFILE, &limit);
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

/* `loader` claimed the load. A thread of another process (this one forked while a thread of
   the parent was loading it, even before that thread said which it was) never finishes it
   here: the core stays unloaded in this process. */
static const struct tcptune_core_entries* wait_for_loader(long loader) {
  if (loader != this_process()) {
    int state = __atomic_load_n(&g_state, __ATOMIC_ACQUIRE);
    while (state == core_unloaded || state == core_loading) {
      if (__atomic_compare_exchange_n(&g_state, &state, core_unavailable, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
        stage_route_triggers_to_next();
        break;
      }
    }
    return stage_core_if_attached();
  }
  if (__atomic_load_n(&g_loader_thread, __ATOMIC_ACQUIRE) == this_thread()) {
    return NULL; /* called from inside the load */
  }
  const long deadline = monotonic_ns() + kLongestWaitNs;
  for (;;) {
    const int state = __atomic_load_n(&g_state, __ATOMIC_ACQUIRE);
    if (state == core_attached) {
      return __atomic_load_n(&g_entries, __ATOMIC_ACQUIRE);
    }
    if (state == core_unavailable || monotonic_ns() > deadline) {
      return NULL;
    }
    (void)syscall(SYS_sched_yield);
  }
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

/* Another copy of libtcptune.so, at another path, comes first in LD_PRELOAD (an image's own and
   an injected one, or `tcptune run`'s and an inherited one): that copy and its core tune the
   process, this one passes every call on (two cores would tune, log and count each connection
   twice). Its hooks are the first definitions in the global scope. The dl functions are the
   stage's own (dl_functions.h): a direct reference would stop the program before main on
   glibc before 2.34. Without them no core loads anyway: no answer is kept. */
static bool another_stage_comes_first(void) {
  static int answer = -1; /* asked once: -1 not yet, else 0 or 1 */
  const int known = __atomic_load_n(&answer, __ATOMIC_ACQUIRE);
  if (known >= 0) {
    return known != 0;
  }
  const int saved_errno = errno;
  const struct stage_dl_functions* dl = stage_dl();
  if (dl == NULL) {
    errno = saved_errno;
    return false;
  }
  Dl_info first;
  Dl_info self;
  void* const first_socket = dl->dlsym(RTLD_DEFAULT, "socket");
  bool other = first_socket != NULL && dl->dladdr(first_socket, &first) != 0 && dl->dladdr(&g_state, &self) != 0 &&
               first.dli_fbase != self.dli_fbase && first.dli_fname != NULL;
  if (other) {
    const char* const slash = strrchr(first.dli_fname, '/');
    other = strcmp(slash != NULL ? slash + 1 : first.dli_fname, "libtcptune.so") == 0;
  }
  errno = saved_errno;
  __atomic_store_n(&answer, other ? 1 : 0, __ATOMIC_RELEASE);
  return other;
}

bool stage_core_possible(void) {
  const int state = __atomic_load_n(&g_state, __ATOMIC_ACQUIRE);
  if (state == core_attached) {
    return true;
  }
  if (state == core_unavailable) {
    return false;
  }
  if (!stage_running_on_glibc() || another_stage_comes_first()) {
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
  /* The load is claimed with the loader's process id in one step: a child forked at any point
     of it knows the load is not its own. */
  long claimant = 0;
  if (!__atomic_compare_exchange_n(&g_loader_process, &claimant, this_process(), 0, __ATOMIC_ACQ_REL,
                                   __ATOMIC_ACQUIRE)) {
    return wait_for_loader(claimant);
  }
  __atomic_store_n(&g_loader_thread, this_thread(), __ATOMIC_RELEASE);
  __atomic_store_n(&g_state, core_loading, __ATOMIC_RELEASE);
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
