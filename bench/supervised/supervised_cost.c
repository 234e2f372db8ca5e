/* supervised_cost: what a program pays, per call, for running under `tcptune run --supervise`
 * (or under the shim, or as it is), measured from inside the program. One JSON line on stdout.
 *
 *   supervised_cost [--notify-floor | --notify-floor-process] connect COUNT [WARMUP]
 *     a listener on 127.0.0.1 (an ephemeral port) whose thread accepts and closes; the main
 *     thread then makes WARMUP (default 100) untimed and COUNT timed sequential blocking
 *     connect() calls to it, each on a fresh socket, timed with CLOCK_MONOTONIC around the
 *     connect() alone (the socket is made before, and timed alone too: where pidfd_getfd is
 *     refused the supervisor makes it). Each socket stays open for the next OPEN_RING
 *     connects, as a program's connection outlives its connect, so that the teardown's work is
 *     the program's own close and not the close of a supervisor's duplicate; it is closed with
 *     SO_LINGER 0, a reset that leaves no TIME_WAIT behind to slow the next connects' port
 *     search. Prints
 *       {"mode":"connect","connects":COUNT,"accepted":N,"us":{"median":..,"p90":..,"p99":..,
 *        "mean":..,"min":..,"max":..},"socket_us":{"median":..,"p90":..,"p99":..},
 *        "socket_connect_us":{...the same...},"first_socket":{"nodelay":N,"congestion":"..",
 *        "sndbuf":N,"rcvbuf":N}}
 *     socket_connect_us: socket() and connect() of each connection together.
 *     first_socket: the options on the first timed socket after its connect, read with
 *     getsockopt, so a run can show that its connects were tuned (or not).
 *
 *   supervised_cost [--notify-floor | --notify-floor-process] loop COUNT [WARMUP]
 *     COUNT loopback connections one after the other, both ends in the main thread: socket() and
 *     connect() to its own listener, accept4(), close the client, close the accepted end (the
 *     client closes first, so its end waits in TIME_WAIT, as in a program that connects, talks
 *     and hangs up). WARMUP (default 20) untimed first. Prints
 *       {"mode":"loop","connections":COUNT,"seconds":..,"us_per_connection":..,"notify_floor":..}
 *     timed from the first socket() to the last close() with CLOCK_MONOTONIC.
 *
 *   supervised_cost [--notify-floor | --filter-midway | --allow-all-midway] syscall CALL LOOPS REPS
 *     REPS repetitions of LOOPS calls of CALL in a tight loop, each repetition timed whole, after
 *     one untimed:
 *       getppid        the cheapest call there is (the worst case for a per-call overhead);
 *       write_devnull  write(2) of one byte to /dev/null;
 *       send_udp       send(2) of 64 bytes on a connected loopback UDP socket whose receiver
 *                      never reads: the whole send path, loopback delivery included (once the
 *                      receive buffer is full the datagram is dropped there), and no other
 *                      thread to wake, so no scheduling in the loop;
 *       send_tcp       send(2) of 64 bytes on a connected loopback TCP socket (TCP_NODELAY set
 *                      by the program), which a thread of this program drains: each send wakes
 *                      it, so where the scheduler puts the two threads shows in the figure.
 *     Prints {"mode":"syscall","call":CALL,"loops":LOOPS,"ns_per_call":[..],"median_ns":..,
 *             "min_ns":..,"notify_floor":..}.
 *     --filter-midway: the REPS repetitions run first without a filter, then the main thread
 *     installs the supervisor's longest filter (below; nothing answers it, and nothing it traps
 *     is called) and they run again: the filter's cost on the same calls in the same process,
 *     without the differences between one process and the next (where it runs, how its memory
 *     is laid out). Adds "unfiltered_ns_per_call", "unfiltered_median_ns" and "unfiltered_min_ns".
 *     --allow-all-midway: the same with a filter of one instruction that allows every call: what
 *     any seccomp filter costs (the kernel's slower path into a system call), which no filter
 *     can go below.
 *
 * --notify-floor: the least a seccomp supervisor can cost, in the same program. Before it measures,
 * the main thread installs the supervisor's longest filter (native arch; connect, listen and the
 * setsockopt pairs of nodelay "force" and keepalive trapped with SECCOMP_RET_USER_NOTIF;
 * everything else allowed) on itself alone, and a thread of
 * the program answers each notification at once with SECCOMP_USER_NOTIF_FLAG_CONTINUE, as the
 * supervisor does after its work (poll, then receive; synchronous wake-up where the kernel has
 * it). The acceptor and drain threads start before the filter and are not under it.
 *
 * Usage errors exit 2, failed system calls exit 1. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define SEND_BYTES 64
#define OPEN_RING 64

#if defined(__x86_64__)
#define NATIVE_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define NATIVE_ARCH AUDIT_ARCH_AARCH64
#else
#error "the notify floor knows x86_64 and aarch64"
#endif
/* SECCOMP_IOCTL_NOTIF_SET_FLAGS and SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP (6.6+), as the supervisor. */
#define NOTIF_SET_FLAGS SECCOMP_IOW(4, __u64)
#define NOTIF_SYNC_WAKE_UP 1ULL

static void die(const char* what) {
  fprintf(stderr, "supervised_cost: %s: %s\n", what, strerror(errno));
  exit(1);
}

static void usage(void) {
  fprintf(
      stderr,
      "usage: supervised_cost [--notify-floor|--notify-floor-process|--supervisor-cpu] connect|loop COUNT [WARMUP]\n"
      "       supervised_cost [--notify-floor|--filter-midway|--allow-all-midway] syscall "
      "getppid|write_devnull|send_udp|send_tcp LOOPS "
      "REPS\n");
  exit(2);
}

static long parse_count(const char* text, long min, long max) {
  char* end = NULL;
  errno = 0;
  const long value = strtol(text, &end, 10);
  if (errno != 0 || end == text || *end != '\0' || value < min || value > max) {
    fprintf(stderr, "supervised_cost: '%s' is not a number from %ld to %ld\n", text, min, max);
    exit(2);
  }
  return value;
}

static long long now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int compare_ll(const void* a, const void* b) {
  const long long x = *(const long long*)a;
  const long long y = *(const long long*)b;
  return (x > y) - (x < y);
}

static int compare_double(const void* a, const void* b) {
  const double x = *(const double*)a;
  const double y = *(const double*)b;
  return (x > y) - (x < y);
}

/* Nearest rank of a sorted array: the smallest value with at least q of the samples at or below. */
static long long percentile(const long long* sorted, long count, double q) {
  long rank = (long)(q * (double)count + 0.999999);
  if (rank < 1) {
    rank = 1;
  }
  return sorted[rank > count ? count - 1 : rank - 1];
}

/* The floor's answerer: a thread of the program, or a child process of its (then `shared` lives in a
 * shared mapping, so that the program sees the count and the child the stop). */
/* User and system time of a getrusage result, in microseconds. */
static long long cpu_us(const struct rusage* usage) {
  return (long long)(usage->ru_utime.tv_sec + usage->ru_stime.tv_sec) * 1000000LL + usage->ru_utime.tv_usec +
         usage->ru_stime.tv_usec;
}

/* Whose CPU time the connect and loop modes report over the calls they time: the task that answers
 * the trapped calls (the floor's thread or process; with --supervisor-cpu the parent, tcptune,
 * whose main thread answers) and the other threads of its process (tcptune's records thread), from
 * each task's run time in nanoseconds (/proc/PID/task/TID/schedstat). 0: none. */
static pid_t answerer_process = 0;
static pid_t answerer_task = 0;

struct cpu_sample {
  long long answering_ns;
  long long others_ns;
  int ok;
};

static long long task_run_ns(pid_t pid, pid_t tid) {
  char path[64];
  (void)snprintf(path, sizeof path, "/proc/%d/task/%d/schedstat", (int)pid, (int)tid);
  FILE* file = fopen(path, "r");
  if (file == NULL) {
    return -1;
  }
  long long ns = -1;
  if (fscanf(file, "%lld", &ns) != 1) {
    ns = -1;
  }
  fclose(file);
  return ns;
}

static struct cpu_sample sample_answerer(void) {
  struct cpu_sample sample = {0, 0, 0};
  char path[48];
  (void)snprintf(path, sizeof path, "/proc/%d/task", (int)answerer_process);
  DIR* dir = answerer_process > 0 ? opendir(path) : NULL;
  if (dir == NULL) {
    return sample;
  }
  for (struct dirent* entry = readdir(dir); entry != NULL; entry = readdir(dir)) {
    const pid_t tid = (pid_t)atoi(entry->d_name);
    const long long ns = tid > 0 ? task_run_ns(answerer_process, tid) : -1;
    if (ns >= 0) {
      *(tid == answerer_task ? &sample.answering_ns : &sample.others_ns) += ns;
      sample.ok |= tid == answerer_task;
    }
  }
  closedir(dir);
  return sample;
}

/* How long the end sample waits after the last timed call: the records thread gathers a batch
 * for 5 ms before it writes, so the timed calls' records are in. */
#define SETTLE_MS 30

/* ,"answerer_cpu":{...}: the run time the answerer and the rest of its process spent between the
 * two samples, and the trapped calls timed in between (connects; the runner knows which arms trap
 * socket() too). null without an answerer. */
static void print_answerer_cpu(struct cpu_sample before, struct cpu_sample after, long calls) {
  if (!before.ok || !after.ok) {
    printf(",\"answerer_cpu\":null");
    return;
  }
  printf(
      ",\"answerer_cpu\":{\"process\":\"%s\",\"answering_ns\":%lld,\"others_ns\":%lld,\"connects\":%ld,"
      "\"settle_ms\":%d}",
      answerer_process == getpid()    ? "self"
      : answerer_process == getppid() ? "parent"
                                      : "child",
      after.answering_ns - before.answering_ns, answerer_process == getpid() ? 0LL : after.others_ns - before.others_ns,
      calls, SETTLE_MS);
}

struct notifier_shared {
  atomic_int stop;
  atomic_long answered;
  atomic_int answerer_tid; /* the answering thread's, once it runs */
};

struct notifier {
  int listener;
  struct notifier_shared* shared;
  pthread_t thread;
  pid_t process;
};

static struct notifier floor_notifier = {.listener = -1};

/* Answers every notification at once: the call goes on as it is. Blocks in the receive, as the
 * supervisor does; stopped by one trapped call made after `stop` is set. */
static void answer_loop(int listener, struct notifier_shared* shared) {
  atomic_store(&shared->answerer_tid, (int)syscall(SYS_gettid));
  struct seccomp_notif_sizes sizes = {0};
  if (syscall(SYS_seccomp, SECCOMP_GET_NOTIF_SIZES, 0, &sizes) != 0) {
    return;
  }
  (void)ioctl(listener, NOTIF_SET_FLAGS, NOTIF_SYNC_WAKE_UP);
  const size_t size = sizes.seccomp_notif > sizeof(struct seccomp_notif) ? sizes.seccomp_notif
                                                                          : sizeof(struct seccomp_notif);
  struct seccomp_notif* request = malloc(size);
  if (request == NULL) {
    return;
  }
  for (;;) {
    memset(request, 0, size);
    if (ioctl(listener, SECCOMP_IOCTL_NOTIF_RECV, request) != 0) {
      if (errno == EINTR || errno == ENOENT) {
        continue;
      }
      break;
    }
    struct seccomp_notif_resp response = {.id = request->id, .flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE};
    const int stopping = atomic_load(&shared->stop);
    if (ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, &response) == 0 && !stopping) {
      atomic_fetch_add(&shared->answered, 1);
    }
    if (stopping) {
      break;
    }
  }
  free(request);
}

static void* answer_notifications(void* arg) {
  struct notifier* notifier = arg;
  answer_loop(notifier->listener, notifier->shared);
  return NULL;
}

#define ARG_LOW(i) (offsetof(struct seccomp_data, args) + 8 * (i)) /* little-endian: the low 32 bits */
/* One trapped setsockopt pair, as the supervisor's filter tests it (the level is reloaded). */
#define TRAP_PAIR(level, name)                                                   \
  BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARG_LOW(1)), BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (level), 0, 3), \
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARG_LOW(2)), BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (name), 0, 1), \
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF)

/* A send that connects (MSG_FASTOPEN in its flags argument) is trapped; any other is allowed. */
#define TRAP_FASTOPEN(nr, flags_index)                                                       \
  BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (nr), 0, 4), BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARG_LOW(flags_index)), \
      BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, MSG_FASTOPEN, 0, 1), BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF), \
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)

/* The supervisor's longest filter (supervisor/seccomp_filter.cpp; a policy that forces nodelay
 * and sets keepalive) on the calling thread alone; its listener. */
static int install_supervisor_filter(void) {
  struct sock_filter program[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, NATIVE_ARCH, 1, 0),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_connect, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_listen, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF),
      TRAP_FASTOPEN(SYS_sendto, 3),
      TRAP_FASTOPEN(SYS_sendmsg, 2),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_setsockopt, 1, 0),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
      TRAP_PAIR(IPPROTO_TCP, TCP_NODELAY),
      TRAP_PAIR(IPPROTO_TCP, TCP_CORK),
      TRAP_PAIR(SOL_SOCKET, SO_KEEPALIVE),
      TRAP_PAIR(IPPROTO_TCP, TCP_KEEPIDLE),
      TRAP_PAIR(IPPROTO_TCP, TCP_KEEPINTVL),
      TRAP_PAIR(IPPROTO_TCP, TCP_KEEPCNT),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  struct sock_fprog fprog = {.len = (unsigned short)(sizeof program / sizeof program[0]), .filter = program};
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
    die("prctl(PR_SET_NO_NEW_PRIVS)");
  }
  const int listener = (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &fprog);
  if (listener < 0) {
    die("seccomp(SECCOMP_FILTER_FLAG_NEW_LISTENER)");
  }
  return listener;
}

/* The supervisor's filter on the calling thread alone, and a thread that answers it. */
/* A filter that allows every call: seccomp's own cost, without any test of ours. */
static void install_allow_all_filter(void) {
  struct sock_filter program[] = {BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)};
  struct sock_fprog fprog = {.len = 1, .filter = program};
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 || syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &fprog) != 0) {
    die("seccomp(allow all)");
  }
}

enum { SUPERVISOR_FILTER_MIDWAY = 1, ALLOW_ALL_MIDWAY = 2 };

enum { FLOOR_NONE = 0, FLOOR_THREAD = 1, FLOOR_PROCESS = 2 };

static void start_notify_floor(int how) {
  floor_notifier.shared =
      mmap(NULL, sizeof *floor_notifier.shared, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (floor_notifier.shared == MAP_FAILED) {
    die("mmap");
  }
  floor_notifier.listener = install_supervisor_filter();
  if (how == FLOOR_PROCESS) {
    floor_notifier.process = fork();
    if (floor_notifier.process < 0) {
      die("fork");
    }
    if (floor_notifier.process == 0) {
      answer_loop(floor_notifier.listener, floor_notifier.shared);
      _exit(0);
    }
    /* Only the child holds the listener: should it die, a trapped call fails (ENOSYS) instead of
     * waiting for ever. */
    close(floor_notifier.listener);
    answerer_process = answerer_task = floor_notifier.process;
    return;
  }
  if (pthread_create(&floor_notifier.thread, NULL, answer_notifications, &floor_notifier) != 0) {
    die("pthread_create");
  }
  while (atomic_load(&floor_notifier.shared->answerer_tid) == 0) {
    usleep(100);
  }
  answerer_process = getpid();
  answerer_task = (pid_t)atomic_load(&floor_notifier.shared->answerer_tid);
}

/* Stops the answerer (one trapped call wakes it: listen on no descriptor, answered EBADF by the
 * kernel); the JSON member that says how many calls it answered. */
static void stop_notify_floor(char* text, size_t size) {
  if (floor_notifier.listener < 0) {
    (void)snprintf(text, size, "\"notify_floor\":null");
    return;
  }
  atomic_store(&floor_notifier.shared->stop, 1);
  (void)listen(-1, 0);
  if (floor_notifier.process > 0) {
    (void)waitpid(floor_notifier.process, NULL, 0);
  } else {
    pthread_join(floor_notifier.thread, NULL);
  }
  (void)snprintf(text, size, "\"notify_floor\":{\"answered\":%ld,\"answerer\":\"%s\"}",
                 (long)atomic_load(&floor_notifier.shared->answered),
                 floor_notifier.process > 0 ? "process" : "thread");
}

/* A TCP listener on 127.0.0.1, an ephemeral port; its address in *address. */
static int loopback_listener(struct sockaddr_in* address) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    die("socket");
  }
  memset(address, 0, sizeof *address);
  address->sin_family = AF_INET;
  address->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof *address;
  if (bind(fd, (const struct sockaddr*)address, length) != 0 || listen(fd, 4096) != 0 ||
      getsockname(fd, (struct sockaddr*)address, &length) != 0) {
    die("listen on 127.0.0.1");
  }
  return fd;
}

struct acceptor {
  int listener;
  atomic_long accepted;
};

/* Accepts and closes until the listener is shut down. */
static void* accept_and_close(void* arg) {
  struct acceptor* acceptor = arg;
  for (;;) {
    const int fd = accept4(acceptor->listener, NULL, NULL, SOCK_CLOEXEC);
    if (fd >= 0) {
      close(fd);
      atomic_fetch_add(&acceptor->accepted, 1);
    } else if (errno != EINTR && errno != ECONNABORTED) {
      return NULL;  /* EINVAL: shut down */
    }
  }
}

/* The options in effect on fd, as a JSON member, into text. */
static void describe_socket(int fd, char* text, size_t size) {
  int nodelay = -1;
  int sndbuf = -1;
  int rcvbuf = -1;
  char congestion[32] = "";
  socklen_t length = sizeof nodelay;
  (void)getsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &nodelay, &length);
  length = sizeof sndbuf;
  (void)getsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, &length);
  length = sizeof rcvbuf;
  (void)getsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, &length);
  length = sizeof congestion - 1;
  (void)getsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, congestion, &length);
  (void)snprintf(text, size, "\"first_socket\":{\"nodelay\":%d,\"congestion\":\"%s\",\"sndbuf\":%d,\"rcvbuf\":%d}",
                 nodelay, congestion, sndbuf, rcvbuf);
}

static int connect_mode(long count, long warmup, int notify_floor) {
  struct sockaddr_in address;
  struct acceptor acceptor = {.listener = loopback_listener(&address)};
  atomic_init(&acceptor.accepted, 0);
  pthread_t thread;
  if (pthread_create(&thread, NULL, accept_and_close, &acceptor) != 0) {
    die("pthread_create");
  }
  if (notify_floor != FLOOR_NONE) {
    start_notify_floor(notify_floor);
  }
  long long* samples = calloc((size_t)count, sizeof *samples);
  long long* socket_samples = calloc((size_t)count, sizeof *socket_samples);
  long long* both_samples = calloc((size_t)count, sizeof *both_samples);
  if (samples == NULL || socket_samples == NULL || both_samples == NULL) {
    die("calloc");
  }
  const struct linger reset = {.l_onoff = 1, .l_linger = 0};
  int ring[OPEN_RING];
  for (int slot = 0; slot < OPEN_RING; ++slot) {
    ring[slot] = -1;
  }
  char first[160] = "\"first_socket\":null";
  struct cpu_sample answerer_before = {0, 0, 0};
  for (long i = -warmup; i < count; ++i) {
    if (i == 0) {
      answerer_before = sample_answerer();
    }
    const long long made = now_ns();
    const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
      die("socket");
    }
    const long long start = now_ns();
    const int result = connect(fd, (const struct sockaddr*)&address, sizeof address);
    const long long end = now_ns();
    if (result != 0) {
      die("connect");
    }
    if (i >= 0) {
      samples[i] = end - start;
      socket_samples[i] = start - made;
      both_samples[i] = end - made;
    }
    if (i == 0) {
      describe_socket(fd, first, sizeof first);
    }
    if (setsockopt(fd, SOL_SOCKET, SO_LINGER, &reset, sizeof reset) != 0) {
      die("setsockopt SO_LINGER");
    }
    const long slot = (i + warmup) % OPEN_RING;
    if (ring[slot] >= 0) {
      close(ring[slot]);
    }
    ring[slot] = fd;
  }
  usleep(SETTLE_MS * 1000);
  const struct cpu_sample answerer_after = sample_answerer();
  for (int slot = 0; slot < OPEN_RING; ++slot) {
    if (ring[slot] >= 0) {
      close(ring[slot]);
    }
  }
  /* Every connection reached the acceptor before it is stopped (bounded: 5 s). */
  const long long deadline = now_ns() + 5000000000LL;
  while (atomic_load(&acceptor.accepted) < count + warmup && now_ns() < deadline) {
    usleep(1000);
  }
  (void)shutdown(acceptor.listener, SHUT_RDWR);
  pthread_join(thread, NULL);
  close(acceptor.listener);
  char floor[160];
  stop_notify_floor(floor, sizeof floor);

  qsort(samples, (size_t)count, sizeof *samples, compare_ll);
  qsort(socket_samples, (size_t)count, sizeof *socket_samples, compare_ll);
  qsort(both_samples, (size_t)count, sizeof *both_samples, compare_ll);
  double sum = 0;
  for (long i = 0; i < count; ++i) {
    sum += (double)samples[i];
  }
  printf("{\"mode\":\"connect\",\"connects\":%ld,\"warmup\":%ld,\"accepted\":%ld,", count, warmup,
         (long)atomic_load(&acceptor.accepted));
  printf("\"us\":{\"median\":%.3f,\"p90\":%.3f,\"p99\":%.3f,\"mean\":%.3f,\"min\":%.3f,\"max\":%.3f},",
         (double)percentile(samples, count, 0.5) / 1e3, (double)percentile(samples, count, 0.9) / 1e3,
         (double)percentile(samples, count, 0.99) / 1e3, sum / (double)count / 1e3, (double)samples[0] / 1e3,
         (double)samples[count - 1] / 1e3);
  printf("\"socket_us\":{\"median\":%.3f,\"p90\":%.3f,\"p99\":%.3f},",
         (double)percentile(socket_samples, count, 0.5) / 1e3, (double)percentile(socket_samples, count, 0.9) / 1e3,
         (double)percentile(socket_samples, count, 0.99) / 1e3);
  printf("\"socket_connect_us\":{\"median\":%.3f,\"p90\":%.3f,\"p99\":%.3f},",
         (double)percentile(both_samples, count, 0.5) / 1e3, (double)percentile(both_samples, count, 0.9) / 1e3,
         (double)percentile(both_samples, count, 0.99) / 1e3);
  printf("%s,%s", first, floor);
  print_answerer_cpu(answerer_before, answerer_after, count);
  printf("}\n");
  free(samples);
  free(socket_samples);
  free(both_samples);
  return 0;
}

/* One connection pair, both ends in this thread; the client closes first. */
static void one_pair(int listener, const struct sockaddr_in* address) {
  const int client = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (client < 0) {
    die("socket");
  }
  if (connect(client, (const struct sockaddr*)address, sizeof *address) != 0) {
    die("connect");
  }
  const int server = accept4(listener, NULL, NULL, SOCK_CLOEXEC);
  if (server < 0) {
    die("accept");
  }
  close(client);
  close(server);
}

static int loop_mode(long count, long warmup, int notify_floor) {
  struct sockaddr_in address;
  const int listener = loopback_listener(&address);
  if (notify_floor != FLOOR_NONE) {
    start_notify_floor(notify_floor);
  }
  long long* pairs = calloc((size_t)count, sizeof *pairs);
  if (pairs == NULL) {
    die("calloc");
  }
  for (long i = 0; i < warmup; ++i) {
    one_pair(listener, &address);
  }
  struct rusage before;
  (void)getrusage(RUSAGE_SELF, &before);
  const struct cpu_sample answerer_before = sample_answerer();
  const long long start = now_ns();
  long long last = start;
  for (long i = 0; i < count; ++i) {
    one_pair(listener, &address);
    const long long done = now_ns();
    pairs[i] = done - last;
    last = done;
  }
  const double seconds = (double)(last - start) / 1e9;
  struct rusage after;
  (void)getrusage(RUSAGE_SELF, &after);
  usleep(SETTLE_MS * 1000);
  const struct cpu_sample answerer_after = sample_answerer();
  close(listener);
  char floor[160];
  stop_notify_floor(floor, sizeof floor);
  qsort(pairs, (size_t)count, sizeof *pairs, compare_ll);
  printf(
      "{\"mode\":\"loop\",\"connections\":%ld,\"warmup\":%ld,\"seconds\":%.6f,\"us_per_connection\":%.3f,"
      "\"pair_us\":{\"median\":%.3f,\"p90\":%.3f,\"p99\":%.3f},\"loop_cpu_us_per_connection\":%.3f,%s",
      count, warmup, seconds, seconds * 1e6 / (double)count, (double)percentile(pairs, count, 0.5) / 1e3,
      (double)percentile(pairs, count, 0.9) / 1e3, (double)percentile(pairs, count, 0.99) / 1e3,
      (double)(cpu_us(&after) - cpu_us(&before)) / (double)count, floor);
  print_answerer_cpu(answerer_before, answerer_after, count);
  printf("}\n");
  free(pairs);
  return 0;
}

struct drain {
  int fd;
};

static void* drain_socket(void* arg) {
  const struct drain* drain = arg;
  static char buffer[1 << 16];
  while (recv(drain->fd, buffer, sizeof buffer, 0) > 0) {
  }
  return NULL;
}

enum call_kind { GETPPID, WRITE_DEVNULL, SEND_UDP, SEND_TCP };

/* reps repetitions of loops calls, each timed whole, into per_call (ns); the calls that failed. */
static long time_calls(enum call_kind which, int fd, long loops, long reps, double* per_call) {
  static const char payload[SEND_BYTES] = {0};
  long failures = 0;
  for (long rep = 0; rep < reps; ++rep) {
    const long long start = now_ns();
    switch (which) {
      case GETPPID:
        for (long i = 0; i < loops; ++i) {
          (void)getppid();
        }
        break;
      case WRITE_DEVNULL:
        for (long i = 0; i < loops; ++i) {
          failures += write(fd, payload, 1) != 1;
        }
        break;
      case SEND_UDP:
      case SEND_TCP:
        for (long i = 0; i < loops; ++i) {
          failures += send(fd, payload, sizeof payload, MSG_NOSIGNAL) != (ssize_t)sizeof payload;
        }
        break;
    }
    per_call[rep] = (double)(now_ns() - start) / (double)loops;
  }
  return failures;
}

/* ,"NAME":[..],"NAME_median_ns":.. (per_call is sorted in place); the median. */
static double print_reps(const char* name, double* per_call, long reps) {
  printf(",\"%s\":[", name);
  for (long rep = 0; rep < reps; ++rep) {
    printf("%s%.2f", rep == 0 ? "" : ",", per_call[rep]);
  }
  qsort(per_call, (size_t)reps, sizeof *per_call, compare_double);
  const double median =
      reps % 2 == 1 ? per_call[reps / 2] : (per_call[reps / 2 - 1] + per_call[reps / 2]) / 2;
  printf("]");
  return median;
}

static int syscall_mode(const char* call, long loops, long reps, int notify_floor, int filter_midway) {
  enum call_kind which;
  if (strcmp(call, "getppid") == 0) {
    which = GETPPID;
  } else if (strcmp(call, "write_devnull") == 0) {
    which = WRITE_DEVNULL;
  } else if (strcmp(call, "send_udp") == 0) {
    which = SEND_UDP;
  } else if (strcmp(call, "send_tcp") == 0) {
    which = SEND_TCP;
  } else {
    usage();
  }
  int fd = -1;
  int listener = -1;
  struct drain drain = {.fd = -1};
  pthread_t thread;
  if (which == WRITE_DEVNULL) {
    fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
    if (fd < 0) {
      die("open /dev/null");
    }
  } else if (which == SEND_UDP) {
    struct sockaddr_in address = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t length = sizeof address;
    listener = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (listener < 0 || bind(listener, (const struct sockaddr*)&address, length) != 0 ||
        getsockname(listener, (struct sockaddr*)&address, &length) != 0) {
      die("bind a UDP socket on 127.0.0.1");
    }
    fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || connect(fd, (const struct sockaddr*)&address, sizeof address) != 0) {
      die("connect a UDP socket");
    }
  } else if (which == SEND_TCP) {
    struct sockaddr_in address;
    listener = loopback_listener(&address);
    fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    /* Set here, so that a policy's nodelay changes nothing about the stream. */
    const int on = 1;
    if (fd < 0 || setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on) != 0 || connect(fd, (const struct sockaddr*)&address, sizeof address) != 0) {
      die("connect");
    }
    drain.fd = accept4(listener, NULL, NULL, SOCK_CLOEXEC);
    if (drain.fd < 0) {
      die("accept");
    }
    if (pthread_create(&thread, NULL, drain_socket, &drain) != 0) {
      die("pthread_create");
    }
  }
  if (notify_floor != FLOOR_NONE) {
    start_notify_floor(notify_floor);
  }
  double* per_call = calloc((size_t)reps, sizeof *per_call);
  double* unfiltered = calloc((size_t)reps, sizeof *unfiltered);
  if (per_call == NULL || unfiltered == NULL) {
    die("calloc");
  }
  /* One untimed repetition first: caches, page faults, a UDP receiver's buffer filled. */
  long failures = time_calls(which, fd, loops, 1, per_call);
  if (filter_midway != 0) {
    failures += time_calls(which, fd, loops, reps, unfiltered);
    if (filter_midway == ALLOW_ALL_MIDWAY) {
      install_allow_all_filter();
    } else {
      (void)install_supervisor_filter();
    }
  }
  failures += time_calls(which, fd, loops, reps, per_call);
  if (failures != 0) {
    fprintf(stderr, "supervised_cost: %ld of the %s calls failed\n", failures, call);
    return 1;
  }
  if (which == SEND_TCP) {
    (void)shutdown(fd, SHUT_WR);
    pthread_join(thread, NULL);
    close(drain.fd);
  }
  if (listener >= 0) {
    close(listener);
  }
  if (fd >= 0) {
    close(fd);
  }
  char floor[160];
  stop_notify_floor(floor, sizeof floor);
  printf("{\"mode\":\"syscall\",\"call\":\"%s\",\"loops\":%ld", call, loops);
  const double median = print_reps("ns_per_call", per_call, reps);
  printf(",\"median_ns\":%.2f,\"min_ns\":%.2f,%s", median, per_call[0], floor);
  if (filter_midway != 0) {
    const double before = print_reps("unfiltered_ns_per_call", unfiltered, reps);
    printf(",\"unfiltered_median_ns\":%.2f,\"unfiltered_min_ns\":%.2f", before, unfiltered[0]);
  }
  printf("}\n");
  free(unfiltered);
  free(per_call);
  return 0;
}

int main(int argc, char** argv) {
  int notify_floor = FLOOR_NONE;
  int filter_midway = 0;
  while (argc >= 2 && strncmp(argv[1], "--", 2) == 0) {
    if (strcmp(argv[1], "--notify-floor") == 0) {
      notify_floor = FLOOR_THREAD;
    } else if (strcmp(argv[1], "--notify-floor-process") == 0) {
      notify_floor = FLOOR_PROCESS;
    } else if (strcmp(argv[1], "--filter-midway") == 0) {
      filter_midway = SUPERVISOR_FILTER_MIDWAY;
    } else if (strcmp(argv[1], "--allow-all-midway") == 0) {
      filter_midway = ALLOW_ALL_MIDWAY;
    } else if (strcmp(argv[1], "--supervisor-cpu") == 0) {
      answerer_process = answerer_task = getppid();
    } else {
      usage();
    }
    --argc;
    ++argv;
  }
  if (notify_floor != FLOOR_NONE && (filter_midway != 0 || answerer_process != 0)) {
    usage();
  }
  if (argc >= 3 && strcmp(argv[1], "connect") == 0 && argc <= 4 && !filter_midway) {
    return connect_mode(parse_count(argv[2], 1, 10000000), argc == 4 ? parse_count(argv[3], 0, 1000000) : 100,
                        notify_floor);
  }
  if (argc >= 3 && strcmp(argv[1], "loop") == 0 && argc <= 4 && !filter_midway) {
    return loop_mode(parse_count(argv[2], 1, 10000000), argc == 4 ? parse_count(argv[3], 0, 1000000) : 20,
                     notify_floor);
  }
  if (argc == 5 && strcmp(argv[1], "syscall") == 0) {
    return syscall_mode(argv[2], parse_count(argv[3], 1, 1000000000), parse_count(argv[4], 1, 10000), notify_floor,
                        filter_midway);
  }
  usage();
  return 2;
}
