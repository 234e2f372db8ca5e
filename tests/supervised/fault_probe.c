/* Programs that stress supervised mode (tcptune run --supervise) where a trapped connect()
 * meets a fault: a kill, a signal, a program the supervisor may not inspect, a program with a
 * seccomp filter of its own, a daemon, and calls the kernel must answer itself (bad
 * descriptors and pointers, other families, other system call ABIs). Every mode bounds its own
 * time. Lines starting "R " are results that must be the same with and without tcptune; lines
 * starting "T " say whether a socket was tuned (TCP_NODELAY, which the test policy turns on).
 *
 *   fault_probe storm THREADS SELF_KILL_MS       connect loop in THREADS threads; SIGKILL itself
 *                                               after SELF_KILL_MS (0: wait to be killed, 20 s;
 *                                               negative: exec sh -c 'exit 3' after -SELF_KILL_MS)
 *   fault_probe strict                          seccomp strict mode in a child, reported
 *   fault_probe signals restart|norestart retry|posix|nonblocking COUNT BYTES
 *   fault_probe nondumpable
 *   fault_probe own_seccomp plain|listener
 *   fault_probe term                            exits 42 on SIGTERM (10 s bound)
 *   fault_probe daemon PORT RESULT_FILE DELAY_MS  double-forks a daemon that connects later
 *   fault_probe attack UNIX_PATH
 *   fault_probe race SECONDS
 *   fault_probe threads COUNT
 *   fault_probe connect                         one connect to its own listener, reported
 *   fault_probe connect_once PORT               exit 0 if connected and tuned, 3 untuned
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>

static void die(const char *what) {
  fprintf(stderr, "fault_probe: %s: %s\n", what, strerror(errno));
  exit(2);
}

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void sleep_ms(long ms) {
  struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&t, &t) != 0 && errno == EINTR) {
  }
}

static int int_option(int fd, int level, int name) {
  int value = -1;
  socklen_t length = sizeof value;
  if (getsockopt(fd, level, name, &value, &length) != 0) {
    return -1;
  }
  return value;
}

static int nodelay_of(int fd) {
  int value = -1;
  socklen_t length = sizeof value;
  if (getsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &value, &length) != 0) {
    return -1;
  }
  return value;
}

static struct sockaddr_in loopback(int port) {
  struct sockaddr_in a;
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_port = htons((uint16_t)port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return a;
}

/* A connect in progress: 0 once connected (within 5 s), else -1 with errno from SO_ERROR
   (ETIMEDOUT if none). */
static int wait_for_connection(int fd) {
  struct pollfd p = {fd, POLLOUT, 0};
  int ready;
  do {
    ready = poll(&p, 1, 5000);
  } while (ready < 0 && errno == EINTR);
  int so_error = 0;
  socklen_t length = sizeof so_error;
  getsockopt(fd, SOL_SOCKET, SO_ERROR, &so_error, &length);
  errno = so_error != 0 ? so_error : ETIMEDOUT;
  return (ready == 1 && so_error == 0) ? 0 : -1;
}

/* ---- an in-process loopback sink: accepts, reads every connection to its end -------------- */

struct sink {
  int listener;
  int port;
  int verify; /* each connection: a 4-byte index, then bytes (index + i) & 0xff */
  int bytes;  /* the length a verified connection must have */
  pthread_mutex_t lock;
  long accepted, intact, broken;
  unsigned char *seen; /* per index, when verifying */
  int seen_size;
};

static void block_all_signals(void) {
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, NULL);
}

static void *sink_connection(void *arg);

struct sink_conn {
  struct sink *sink;
  int fd;
};

static void *sink_accept(void *arg) {
  struct sink *s = arg;
  block_all_signals();
  for (;;) {
    int fd = accept4(s->listener, NULL, NULL, SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED || errno == EMFILE || errno == ENFILE) {
        if (errno == EMFILE || errno == ENFILE) {
          sleep_ms(1);
        }
        continue;
      }
      return NULL;
    }
    struct sink_conn *c = malloc(sizeof *c);
    c->sink = s;
    c->fd = fd;
    pthread_t t;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&attr, 64 * 1024);
    if (pthread_create(&t, &attr, sink_connection, c) != 0) {
      sink_connection(c);
    }
    pthread_attr_destroy(&attr);
  }
}

static void *sink_connection(void *arg) {
  struct sink_conn *c = arg;
  struct sink *s = c->sink;
  int fd = c->fd;
  free(c);
  block_all_signals();
  unsigned char buffer[4096];
  long total = 0;
  uint32_t index = 0;
  int good = 1;
  for (;;) {
    ssize_t n = read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      break;
    }
    for (ssize_t i = 0; i < n; ++i, ++total) {
      if (total < 4) {
        index |= (uint32_t)buffer[i] << (8 * total);
      } else if (buffer[i] != (unsigned char)((index + (uint32_t)total) & 0xff)) {
        good = 0;
      }
    }
  }
  close(fd);
  pthread_mutex_lock(&s->lock);
  ++s->accepted;
  if (s->verify) {
    if (good && total == s->bytes && (int)index < s->seen_size && !s->seen[index]) {
      s->seen[index] = 1;
      ++s->intact;
    } else {
      ++s->broken;
    }
  }
  pthread_mutex_unlock(&s->lock);
  return NULL;
}

static void sink_start(struct sink *s, int verify, int bytes, int count) {
  memset(s, 0, sizeof *s);
  pthread_mutex_init(&s->lock, NULL);
  s->verify = verify;
  s->bytes = bytes;
  s->seen_size = count;
  s->seen = calloc((size_t)count + 1, 1);
  s->listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s->listener < 0) {
    die("socket");
  }
  struct sockaddr_in a = loopback(0);
  if (bind(s->listener, (struct sockaddr *)&a, sizeof a) != 0 || listen(s->listener, 4096) != 0) {
    die("bind/listen");
  }
  socklen_t length = sizeof a;
  getsockname(s->listener, (struct sockaddr *)&a, &length);
  s->port = ntohs(a.sin_port);
  pthread_t t;
  if (pthread_create(&t, NULL, sink_accept, s) != 0) {
    die("pthread_create");
  }
  pthread_detach(t);
}

static long sink_read(struct sink *s, long *field) {
  pthread_mutex_lock(&s->lock);
  long value = *field;
  pthread_mutex_unlock(&s->lock);
  return value;
}

/* ---- storm: killed while connects are trapped ------------------------------------------------ */

static int storm_port;
static volatile long storm_connects;

static void *storm_thread(void *arg) {
  (void)arg;
  for (;;) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) {
      continue;
    }
    struct sockaddr_in a = loopback(storm_port);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) == 0) {
      __atomic_add_fetch(&storm_connects, 1, __ATOMIC_RELAXED);
    }
    close(fd);
  }
  return NULL;
}

static int mode_storm(int threads, long self_kill_ms) {
  struct sink s;
  sink_start(&s, 0, 0, 1);
  storm_port = s.port;
  for (int i = 0; i < threads; ++i) {
    pthread_t t;
    if (pthread_create(&t, NULL, storm_thread, NULL) != 0) {
      die("pthread_create");
    }
  }
  double start = now_s();
  while (__atomic_load_n(&storm_connects, __ATOMIC_RELAXED) < 10 && now_s() - start < 10) {
    sleep_ms(1);
  }
  printf("ready %ld\n", (long)__atomic_load_n(&storm_connects, __ATOMIC_RELAXED));
  fflush(stdout);
  if (self_kill_ms > 0) {
    sleep_ms(self_kill_ms);
    kill(getpid(), SIGKILL);
  } else if (self_kill_ms < 0) {
    /* exec while the other threads' connects are trapped: the kernel ends them first */
    sleep_ms(-self_kill_ms);
    execl("/bin/sh", "sh", "-c", "exit 3", (char *)NULL);
    die("execl");
  }
  sleep_ms(20000);
  return 3;
}

/* ---- signals: connects interrupted by a 100 us timer ----------------------------------------- */

static volatile sig_atomic_t signals_seen;
static void count_signal(int signal_number) {
  (void)signal_number;
  ++signals_seen;
}

static int write_all(int fd, const unsigned char *data, size_t length) {
  while (length > 0) {
    ssize_t n = write(fd, data, length);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      return -1;
    }
    data += n;
    length -= (size_t)n;
  }
  return 0;
}

/* handling: 0 retry (EINTR: connect again), 1 posix (EINTR: the connection goes on; poll, then
 * SO_ERROR), 2 nonblocking (a nonblocking socket: EINPROGRESS, poll, SO_ERROR; EINTR is an error) */
static int mode_signals(int restart, int handling, int count, int bytes) {
  const int posix = handling == 1;
  const int nonblocking = handling == 2;
  signal(SIGPIPE, SIG_IGN);
  struct sink s;
  sink_start(&s, 1, bytes, count);
  struct sigaction action;
  memset(&action, 0, sizeof action);
  action.sa_handler = count_signal;
  action.sa_flags = restart ? SA_RESTART : 0;
  sigaction(SIGALRM, &action, NULL);
  struct itimerval timer = {{0, 100}, {0, 100}};
  setitimer(ITIMER_REAL, &timer, NULL);
  unsigned char *payload = malloc((size_t)bytes);
  long connected = 0, eintr = 0, retried_eisconn = 0, tuned = 0, untuned = 0, failed_writes = 0, errors = 0;
  char first_error[160] = "";
  for (int i = 0; i < count; ++i) {
    int fd;
    do {
      fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | (nonblocking ? SOCK_NONBLOCK : 0), 0);
    } while (fd < 0 && errno == EINTR);
    if (fd < 0) {
      die("socket");
    }
    struct sockaddr_in a = loopback(s.port);
    int rc = connect(fd, (struct sockaddr *)&a, sizeof a);
    if (nonblocking && rc != 0 && errno == EINPROGRESS) {
      rc = wait_for_connection(fd);
    }
    if (nonblocking && rc == 0) {
      int flags = fcntl(fd, F_GETFL);
      fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
    }
    while (!nonblocking && rc != 0 && errno == EINTR) {
      ++eintr;
      if (posix) {
        /* POSIX: the connection goes on asynchronously; wait for it, then read SO_ERROR. */
        rc = wait_for_connection(fd);
        break;
      }
      rc = connect(fd, (struct sockaddr *)&a, sizeof a);
      if (rc != 0 && (errno == EISCONN)) {
        ++retried_eisconn;
        rc = 0;
      } else if (rc != 0 && (errno == EALREADY || errno == EINPROGRESS)) {
        struct pollfd p = {fd, POLLOUT, 0};
        while (poll(&p, 1, 5000) < 0 && errno == EINTR) {
        }
        rc = connect(fd, (struct sockaddr *)&a, sizeof a);
        if (rc != 0 && errno == EISCONN) {
          rc = 0;
        }
      }
    }
    if (rc != 0) {
      ++errors;
      if (first_error[0] == '\0') {
        snprintf(first_error, sizeof first_error, "connect %d: %s", i, strerror(errno));
      }
      close(fd);
      continue;
    }
    ++connected;
    if (nodelay_of(fd) == 1) {
      ++tuned;
    } else {
      ++untuned;
    }
    for (int b = 0; b < bytes; ++b) {
      payload[b] = b < 4 ? (unsigned char)(((uint32_t)i >> (8 * b)) & 0xff) : (unsigned char)((i + b) & 0xff);
    }
    if (write_all(fd, payload, (size_t)bytes) != 0) {
      ++failed_writes;
      if (first_error[0] == '\0') {
        snprintf(first_error, sizeof first_error, "write on connection %d: %s", i, strerror(errno));
      }
    }
    close(fd);
  }
  struct itimerval off = {{0, 0}, {0, 0}};
  setitimer(ITIMER_REAL, &off, NULL);
  double start = now_s();
  while (sink_read(&s, &s.accepted) < connected && now_s() - start < 5) {
    sleep_ms(5);
  }
  sleep_ms(50);
  printf("{\"count\":%d,\"connected\":%ld,\"errors\":%ld,\"eintr\":%ld,\"retried_eisconn\":%ld,\"signals\":%ld,"
         "\"tuned\":%ld,\"untuned\":%ld,\"failed_writes\":%ld,\"accepted\":%ld,\"intact\":%ld,\"broken\":%ld,"
         "\"first_error\":\"%s\"}\n",
         count, connected, errors, eintr, retried_eisconn, (long)signals_seen, tuned, untuned, failed_writes,
         sink_read(&s, &s.accepted), sink_read(&s, &s.intact), sink_read(&s, &s.broken), first_error);
  return 0;
}

/* ---- one connect to an in-process sink ------------------------------------------------------- */

static int connect_and_report(const char *label) {
  struct sink s;
  sink_start(&s, 0, 0, 1);
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_in a = loopback(s.port);
  int rc = connect(fd, (struct sockaddr *)&a, sizeof a);
  int error = rc == 0 ? 0 : errno;
  printf("R %s connect %d %d\n", label, rc, error);
  printf("T %s nodelay=%d\n", label, nodelay_of(fd));
  close(fd);
  fflush(stdout);
  return rc == 0 ? 0 : 1;
}

static int mode_nondumpable(void) {
  if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0) {
    die("prctl(PR_SET_DUMPABLE)");
  }
  printf("R dumpable %d\n", prctl(PR_GET_DUMPABLE, 0, 0, 0, 0));
  int rc = connect_and_report("nondumpable");
  int second = connect_and_report("nondumpable-again");
  return rc != 0 || second != 0;
}

/* ---- a filter of the program's own ---------------------------------------------------------- */

#define OWN_FD 200

static int install_own_filter(unsigned int flags) {
  /* connect(OWN_FD, ...) fails with EACCES; everything else is allowed. */
  struct sock_filter code[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_connect, 0, 3),
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0])),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, OWN_FD, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EACCES),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  struct sock_fprog program = {(unsigned short)(sizeof code / sizeof code[0]), code};
  return (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, flags, &program);
}

static int mode_own_seccomp(int with_listener) {
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
    die("prctl(PR_SET_NO_NEW_PRIVS)");
  }
  int rc = install_own_filter(with_listener ? SECCOMP_FILTER_FLAG_NEW_LISTENER : 0);
  int error = rc < 0 ? errno : 0;
  /* Printed, not compared: a second listener is refused under a supervisor (EBUSY). */
  printf("own_filter %s %d %s\n", with_listener ? "listener" : "plain", rc < 0 ? -1 : 0, strerror(error));
  if (rc < 0 && with_listener) {
    if (install_own_filter(0) < 0) {
      die("seccomp without a listener");
    }
  } else if (rc < 0) {
    die("seccomp");
  } else if (with_listener) {
    close(rc); /* nothing traps into it */
  }
  struct sink s;
  sink_start(&s, 0, 0, 1);
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (dup2(fd, OWN_FD) < 0) {
    die("dup2");
  }
  close(fd);
  struct sockaddr_in a = loopback(s.port);
  int denied = connect(OWN_FD, (struct sockaddr *)&a, sizeof a);
  printf("R own_filter_denied %d %d\n", denied, denied == 0 ? 0 : errno);
  int result = connect_and_report("own_filter_allowed");
  return result;
}

/* Strict mode (read, write, exit only) in a child: refused over a filter (EINVAL). */
static int mode_strict(void) {
  fflush(stdout);
  pid_t child = fork();
  if (child == 0) {
    if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_STRICT, 0, 0, 0) != 0) {
      printf("strict refused %d\n", errno);
      fflush(stdout);
      _exit(1);
    }
    static const char text[] = "strict entered\n";
    (void)!write(1, text, sizeof text - 1);
    syscall(SYS_exit, 0);
  }
  int status = 0;
  waitpid(child, &status, 0);
  printf("strict child %s %d\n", WIFEXITED(status) ? "exit" : "signal",
         WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
  return 0;
}

/* ---- exit and signals ------------------------------------------------------------------------ */

static volatile sig_atomic_t got_term;
static void on_term(int signal_number) {
  (void)signal_number;
  got_term = 1;
}

static int mode_term(void) {
  struct sigaction action;
  memset(&action, 0, sizeof action);
  action.sa_handler = on_term;
  sigaction(SIGTERM, &action, NULL);
  printf("ready\n");
  fflush(stdout);
  double start = now_s();
  while (!got_term && now_s() - start < 10) {
    sleep_ms(5);
  }
  return got_term ? 42 : 1;
}

static int mode_daemon(int port, const char *result_file, long delay_ms) {
  pid_t first = fork();
  if (first < 0) {
    die("fork");
  }
  if (first == 0) {
    setsid();
    pid_t second = fork();
    if (second != 0) {
      _exit(second < 0 ? 2 : 0);
    }
    /* The daemon: the program that started it has exited by now. */
    for (int fd = 0; fd < 3; ++fd) {
      int null = open("/dev/null", O_RDWR);
      dup2(null, fd);
      if (null > 2) {
        close(null);
      }
    }
    sleep_ms(delay_ms);
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = loopback(port);
    int rc = connect(fd, (struct sockaddr *)&a, sizeof a);
    int error = rc == 0 ? 0 : errno;
    char text[200];
    int length = snprintf(text, sizeof text, "connect=%d errno=%d nodelay=%d ppid=%d\n", rc, error, nodelay_of(fd),
                          (int)getppid());
    char partial[4096];
    snprintf(partial, sizeof partial, "%s.tmp", result_file);
    int out = open(partial, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (out >= 0) {
      (void)!write(out, text, (size_t)length);
      close(out);
      rename(partial, result_file);
    }
    close(fd);
    _exit(0);
  }
  int status = 0;
  waitpid(first, &status, 0);
  printf("program exits, daemon started\n");
  return 0;
}

/* ---- the attack: calls the kernel answers, compared with and without tcptune ---------------- */

static void result(const char *name, int rc, int error) {
  printf("R %s %d %d\n", name, rc, rc < 0 ? error : 0);
}

static void tuned(const char *name, int fd) {
  printf("T %s nodelay=%d\n", name, nodelay_of(fd));
}

static int tcp_socket(int family, int flags) {
  return socket(family, SOCK_STREAM | SOCK_CLOEXEC | flags, 0);
}

#define ATTEMPT(name, call)          \
  do {                               \
    errno = 0;                       \
    int rc_ = (int)(call);           \
    result((name), rc_, errno);      \
  } while (0)

static long int80_call(long nr, long a, long b, long c) {
#if defined(__x86_64__)
  long ret;
  __asm__ volatile("int $0x80" : "=a"(ret) : "a"(nr), "b"(a), "c"(b), "d"(c) : "memory", "r8", "r9", "r10", "r11");
  return ret;
#else
  (void)nr, (void)a, (void)b, (void)c;
  return -ENOSYS;
#endif
}

/* i386 socket() and connect() by int 0x80 (a 32-bit ABI call from this 64-bit program), run in
 * a child so that a kernel without IA32 emulation (SIGSEGV) only ends the child. */
static void attack_ia32(int port) {
#if defined(__x86_64__)
  fflush(stdout);
  pid_t child = fork();
  if (child == 0) {
    void *low = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_32BIT, -1, 0);
    if (low == MAP_FAILED) {
      printf("R ia32 unsupported 0\n");
      _exit(0);
    }
    struct sockaddr_in a = loopback(port);
    memcpy(low, &a, sizeof a);
    long fd = int80_call(359 /* i386 socket */, AF_INET, SOCK_STREAM, 0);
    if (fd < 0) {
      printf("R ia32_socket %ld %ld\n", fd < 0 ? -1L : 0L, -fd);
      _exit(0);
    }
    long rc = int80_call(362 /* i386 connect */, fd, (long)(uintptr_t)low, sizeof a);
    printf("R ia32_connect %ld %ld\n", rc < 0 ? -1L : rc, rc < 0 ? -rc : 0);
    tuned("ia32_connect", (int)fd);
    /* socketcall(SYS_CONNECT, args): the older multiplexed entry */
    long fd2 = int80_call(359, AF_INET, SOCK_STREAM, 0);
    uint32_t args[3] = {(uint32_t)fd2, (uint32_t)(uintptr_t)low, (uint32_t)sizeof a};
    memcpy((char *)low + 64, args, sizeof args);
    long rc2 = int80_call(102 /* socketcall */, 3 /* SYS_CONNECT */, (long)(uintptr_t)((char *)low + 64), 0);
    printf("R ia32_socketcall_connect %ld %ld\n", rc2 < 0 ? -1L : rc2, rc2 < 0 ? -rc2 : 0);
    tuned("ia32_socketcall_connect", (int)fd2);
    /* Keepalive asked for on the socket connected through the other ABI: in effect. */
    int one = 1;
    if (setsockopt((int)fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one) == 0) {
      printf("R ia32_keepalive_effective %d\n", int_option((int)fd, SOL_SOCKET, SO_KEEPALIVE));
    }
    fflush(stdout);
    _exit(0);
  }
  int status = 0;
  waitpid(child, &status, 0);
  if (WIFSIGNALED(status)) {
    printf("R ia32 signal %d\n", WTERMSIG(status));
  }
  /* x32: the native architecture with bit 30 set in the call number. */
  int fd = tcp_socket(AF_INET, 0);
  struct sockaddr_in a = loopback(port);
  errno = 0;
  long rc = syscall(0x40000000L | SYS_connect, fd, &a, sizeof a);
  result("x32_connect", (int)rc, errno);
  if (rc == 0) {
    tuned("x32_connect", fd);
  }
  close(fd);
#else
  (void)port;
#endif
}

#define CLOSED_FD 900
#define UNSHARED_FD 950

struct unshared_connect {
  int port, rc, error, nodelay;
};

static void *unshared_thread(void *arg) {
  struct unshared_connect *job = arg;
  if (unshare(CLONE_FILES) != 0) {
    job->error = errno;
    return NULL;
  }
  int fd = dup2(tcp_socket(AF_INET, 0), UNSHARED_FD);
  struct sockaddr_in a = loopback(job->port);
  errno = 0;
  job->rc = connect(fd, (struct sockaddr *)&a, sizeof a);
  job->error = errno;
  job->nodelay = nodelay_of(fd);
  return NULL;
}

static int mode_attack(const char *unix_path) {
  signal(SIGPIPE, SIG_IGN);
  struct sink s;
  sink_start(&s, 0, 0, 1);
  struct sockaddr_in a = loopback(s.port);
  int fd;

  /* Descriptors the kernel refuses before it reads anything. */
  /* A number far above what the sink's accepted connections take, so it stays closed. */
  fd = dup2(tcp_socket(AF_INET, 0), CLOSED_FD);
  close(fd);
  ATTEMPT("closed_fd", connect(fd, (struct sockaddr *)&a, sizeof a));
  ATTEMPT("negative_fd", connect(-1, (struct sockaddr *)&a, sizeof a));
  ATTEMPT("huge_fd", connect(1 << 20, (struct sockaddr *)&a, sizeof a));
  int null = open("/dev/null", O_RDWR | O_CLOEXEC);
  ATTEMPT("not_a_socket", connect(null, (struct sockaddr *)&a, sizeof a));
  ATTEMPT("listen_not_a_socket", listen(null, 5));
  int pipes[2];
  if (pipe(pipes) == 0) {
    ATTEMPT("pipe_fd", connect(pipes[0], (struct sockaddr *)&a, sizeof a));
  }
  ATTEMPT("closed_fd_bad_pointer", connect(fd, (struct sockaddr *)1, sizeof a));

  /* Addresses the kernel cannot read, or refuses. */
  fd = tcp_socket(AF_INET, 0);
  ATTEMPT("bad_pointer", connect(fd, (struct sockaddr *)1, sizeof a));
  ATTEMPT("null_pointer", connect(fd, NULL, sizeof a));
  ATTEMPT("null_pointer_zero_length", connect(fd, NULL, 0));
  ATTEMPT("zero_length", connect(fd, (struct sockaddr *)&a, 0));
  ATTEMPT("short_length", connect(fd, (struct sockaddr *)&a, 8));
  ATTEMPT("negative_length", connect(fd, (struct sockaddr *)&a, (socklen_t)-1));
  ATTEMPT("oversized_length", connect(fd, (struct sockaddr *)&a, 4096));
  long page = sysconf(_SC_PAGESIZE);
  char *pages = mmap(NULL, (size_t)page * 2, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  mprotect(pages + page, (size_t)page, PROT_NONE);
  /* The address's last 8 bytes in an unreadable page. */
  memcpy(pages + page - 8, &a, 8);
  ATTEMPT("straddles_unreadable_page", connect(fd, (struct sockaddr *)(pages + page - 8), sizeof a));
  struct sockaddr_in6 wrong_family;
  memset(&wrong_family, 0, sizeof wrong_family);
  wrong_family.sin6_family = AF_INET6;
  wrong_family.sin6_port = a.sin_port;
  wrong_family.sin6_addr = in6addr_loopback;
  ATTEMPT("ipv6_address_on_ipv4_socket", connect(fd, (struct sockaddr *)&wrong_family, sizeof wrong_family));
  /* The same through the sends that connect (TCP Fast Open). */
  ATTEMPT("fastopen_sendto_bad_pointer", sendto(fd, "x", 1, MSG_FASTOPEN | MSG_NOSIGNAL, (struct sockaddr *)1, sizeof a));
  ATTEMPT("fastopen_sendto_no_address", sendto(fd, "x", 1, MSG_FASTOPEN | MSG_NOSIGNAL, NULL, 0));
  ATTEMPT("fastopen_sendto_straddles_unreadable_page",
          sendto(fd, "x", 1, MSG_FASTOPEN | MSG_NOSIGNAL, (struct sockaddr *)(pages + page - 8), sizeof a));
  ATTEMPT("fastopen_sendmsg_bad_msghdr", sendmsg(fd, (struct msghdr *)1, MSG_FASTOPEN | MSG_NOSIGNAL));
  ATTEMPT("fastopen_sendmsg_msghdr_unreadable",
          sendmsg(fd, (struct msghdr *)(pages + page - 8), MSG_FASTOPEN | MSG_NOSIGNAL));
  {
    struct msghdr message = {0};
    message.msg_name = (void *)1;
    message.msg_namelen = sizeof a;
    ATTEMPT("fastopen_sendmsg_bad_name", sendmsg(fd, &message, MSG_FASTOPEN | MSG_NOSIGNAL));
  }
  /* The socket was never connected: a good connect still works and is tuned. */
  ATTEMPT("after_refusals", connect(fd, (struct sockaddr *)&a, sizeof a));
  tuned("after_refusals", fd);
  ATTEMPT("again_connected", connect(fd, (struct sockaddr *)&a, sizeof a));
  struct sockaddr unspec;
  memset(&unspec, 0, sizeof unspec);
  unspec.sa_family = AF_UNSPEC;
  ATTEMPT("unspec_disconnects", connect(fd, &unspec, sizeof unspec));
  ATTEMPT("reconnect_after_unspec", connect(fd, (struct sockaddr *)&a, sizeof a));
  close(fd);
  fd = tcp_socket(AF_INET, 0);
  ATTEMPT("unspec_unconnected", connect(fd, &unspec, sizeof unspec));
  ATTEMPT("unspec_short", connect(fd, &unspec, 1));
  close(fd);

  /* A port with no listener: refused, then refused again on the same socket. */
  int dead_port;
  {
    int probe = tcp_socket(AF_INET, 0);
    struct sockaddr_in any = loopback(0);
    bind(probe, (struct sockaddr *)&any, sizeof any);
    socklen_t length = sizeof any;
    getsockname(probe, (struct sockaddr *)&any, &length);
    dead_port = ntohs(any.sin_port);
    close(probe);
  }
  struct sockaddr_in refused = loopback(dead_port);
  fd = tcp_socket(AF_INET, 0);
  ATTEMPT("refused", connect(fd, (struct sockaddr *)&refused, sizeof refused));
  ATTEMPT("refused_again", connect(fd, (struct sockaddr *)&refused, sizeof refused));
  ATTEMPT("connect_after_refused", connect(fd, (struct sockaddr *)&a, sizeof a));
  close(fd);

  /* Other families and types. */
  fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  ATTEMPT("udp_connect", connect(fd, (struct sockaddr *)&a, sizeof a));
  ATTEMPT("udp_unspec", connect(fd, &unspec, sizeof unspec));
  ATTEMPT("udp_listen", listen(fd, 5));
  close(fd);
  fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_un u;
  memset(&u, 0, sizeof u);
  u.sun_family = AF_UNIX;
  snprintf(u.sun_path, sizeof u.sun_path, "%s", unix_path);
  unlink(unix_path);
  int unix_listener = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  bind(unix_listener, (struct sockaddr *)&u, sizeof u);
  ATTEMPT("unix_listen", listen(unix_listener, 5));
  ATTEMPT("unix_connect", connect(fd, (struct sockaddr *)&u, sizeof u));
  close(fd);
  fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  snprintf(u.sun_path, sizeof u.sun_path, "%s.missing", unix_path);
  ATTEMPT("unix_connect_missing", connect(fd, (struct sockaddr *)&u, sizeof u));
  close(fd);
  fd = tcp_socket(AF_INET, 0);
  snprintf(u.sun_path, sizeof u.sun_path, "%s", unix_path);
  ATTEMPT("unix_address_on_tcp_socket", connect(fd, (struct sockaddr *)&u, sizeof u));
  close(fd);
  close(unix_listener);
  unlink(unix_path);

  /* IPv6: a listener on ::1, and an IPv4-mapped address from an IPv6 socket. */
  int listener6 = tcp_socket(AF_INET6, 0);
  if (listener6 >= 0) {
    struct sockaddr_in6 a6;
    memset(&a6, 0, sizeof a6);
    a6.sin6_family = AF_INET6;
    a6.sin6_addr = in6addr_loopback;
    int bound = bind(listener6, (struct sockaddr *)&a6, sizeof a6);
    if (bound == 0) {
      listen(listener6, 16);
      socklen_t length = sizeof a6;
      getsockname(listener6, (struct sockaddr *)&a6, &length);
      fd = tcp_socket(AF_INET6, 0);
      ATTEMPT("ipv6_connect", connect(fd, (struct sockaddr *)&a6, sizeof a6));
      tuned("ipv6_connect", fd);
      close(fd);
      fd = tcp_socket(AF_INET6, 0);
      ATTEMPT("ipv6_short_length", connect(fd, (struct sockaddr *)&a6, sizeof(struct sockaddr_in)));
      close(fd);
    } else {
      printf("R ipv6_unavailable 0 0\n");
    }
    close(listener6);
    fd = tcp_socket(AF_INET6, 0);
    struct sockaddr_in6 mapped;
    memset(&mapped, 0, sizeof mapped);
    mapped.sin6_family = AF_INET6;
    mapped.sin6_port = a.sin_port;
    inet_pton(AF_INET6, "::ffff:127.0.0.1", &mapped.sin6_addr);
    ATTEMPT("ipv4_mapped_connect", connect(fd, (struct sockaddr *)&mapped, sizeof mapped));
    tuned("ipv4_mapped_connect", fd);
    close(fd);
  }

  /* Nonblocking: connect, connect again while in progress (or done), poll, connect again. */
  fd = tcp_socket(AF_INET, SOCK_NONBLOCK);
  errno = 0;
  int first = connect(fd, (struct sockaddr *)&a, sizeof a);
  int first_error = errno;
  /* loopback may finish at once (0) or report EINPROGRESS: both are the kernel's */
  printf("R nonblocking_first %d\n", first == 0 || first_error == EINPROGRESS ? 0 : first_error);
  errno = 0;
  int second = connect(fd, (struct sockaddr *)&a, sizeof a);
  int second_error = errno;
  printf("R nonblocking_second %d\n", second == 0 || second_error == EISCONN || second_error == EALREADY ? 0
                                                                                                          : second_error);
  struct pollfd p = {fd, POLLOUT, 0};
  poll(&p, 1, 5000);
  ATTEMPT("nonblocking_after_poll", connect(fd, (struct sockaddr *)&a, sizeof a));
  tuned("nonblocking", fd);
  close(fd);

  /* listen: unbound (autobind), twice (a backlog change), after connect. */
  fd = tcp_socket(AF_INET, 0);
  ATTEMPT("listen_unbound", listen(fd, 5));
  ATTEMPT("listen_again", listen(fd, 50));
  ATTEMPT("connect_on_listener", connect(fd, (struct sockaddr *)&a, sizeof a));
  close(fd);
  fd = tcp_socket(AF_INET, 0);
  connect(fd, (struct sockaddr *)&a, sizeof a);
  ATTEMPT("listen_connected", listen(fd, 5));
  close(fd);
  ATTEMPT("listen_closed_fd", listen(CLOSED_FD, 5));

  /* Closed means closed at once: a listener's port is free to listen on again (no
   * SO_REUSEADDR), and a connection the program closes gives its peer EOF, however soon after
   * the trapped call that made it. Twenty times each, to meet any window. */
  int relisten_failures = 0, eof_late = 0;
  for (int i = 0; i < 20; ++i) {
    struct sockaddr_in any = loopback(0);
    socklen_t length = sizeof any;
    fd = tcp_socket(AF_INET, 0);
    if (bind(fd, (struct sockaddr *)&any, sizeof any) != 0 || listen(fd, 5) != 0 ||
        getsockname(fd, (struct sockaddr *)&any, &length) != 0) {
      die("listen for relisten");
    }
    close(fd);
    fd = tcp_socket(AF_INET, 0);
    relisten_failures += bind(fd, (struct sockaddr *)&any, sizeof any) != 0 || listen(fd, 5) != 0;
    close(fd);

    int peer = tcp_socket(AF_INET, 0);
    if (connect(peer, (struct sockaddr *)&a, sizeof a) != 0) {
      die("connect for eof");
    }
    int closing = tcp_socket(AF_INET, 0);
    struct sockaddr_in self = loopback(0);
    length = sizeof self;
    int server = tcp_socket(AF_INET, 0);
    if (bind(server, (struct sockaddr *)&self, sizeof self) != 0 || listen(server, 5) != 0 ||
        getsockname(server, (struct sockaddr *)&self, &length) != 0 ||
        connect(closing, (struct sockaddr *)&self, sizeof self) != 0) {
      die("connect to self for eof");
    }
    int accepted = accept(server, NULL, NULL);
    close(closing);
    struct pollfd readable = {accepted, POLLIN, 0};
    char byte;
    eof_late += !(poll(&readable, 1, 1000) == 1 && read(accepted, &byte, 1) == 0);
    close(accepted);
    close(server);
    close(peer);
  }
  printf("R relisten_after_close_failures %d\n", relisten_failures);
  printf("R eof_after_close_late %d\n", eof_late);

  /* setsockopt on the trapped options: bad pointers, short lengths, other sockets. */
  fd = tcp_socket(AF_INET, 0);
  connect(fd, (struct sockaddr *)&a, sizeof a);
  int zero = 0, one = 1;
  ATTEMPT("nodelay_bad_pointer", setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, (void *)1, sizeof zero));
  ATTEMPT("nodelay_short", setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &zero, 2));
  ATTEMPT("cork_bad_pointer", setsockopt(fd, IPPROTO_TCP, TCP_CORK, (void *)1, sizeof one));
  ATTEMPT("keepalive_bad_pointer", setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, (void *)1, sizeof one));
  ATTEMPT("nodelay_negative_length", setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &zero, (socklen_t)-1));
  ATTEMPT("cork_negative_length", setsockopt(fd, IPPROTO_TCP, TCP_CORK, &one, (socklen_t)-1));
  ATTEMPT("keepalive_negative_length", setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, (socklen_t)-1));
  /* Values the kernel refuses (1..32767 seconds, 1..127 probes) stay refused. */
  int huge = 40000, many = 200, negative = -5;
  ATTEMPT("keepidle_zero", setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &zero, sizeof zero));
  ATTEMPT("keepidle_huge", setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &huge, sizeof huge));
  ATTEMPT("keepintvl_negative", setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &negative, sizeof negative));
  ATTEMPT("keepcnt_many", setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &many, sizeof many));
  ATTEMPT("keepcnt_zero", setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &zero, sizeof zero));
  /* Valid values: made, or answered unmade under a rule that keeps its own (0 either way). */
  int idle = 100, large_length_value[4] = {0, 0, 0, 0};
  ATTEMPT("keepidle_valid", setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle));
  ATTEMPT("nodelay_long_length", setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, large_length_value, sizeof large_length_value));
  ATTEMPT("nodelay_not_a_socket", setsockopt(null, IPPROTO_TCP, TCP_NODELAY, &zero, sizeof zero));
  ATTEMPT("nodelay_closed_fd", setsockopt(CLOSED_FD, IPPROTO_TCP, TCP_NODELAY, &zero, sizeof zero));
  close(fd);

  /* Keepalive the program owns: set before connect (a rule leaves it to the program), then
   * its idle time after connect. The program's value is the one in effect, as without tcptune. */
  fd = tcp_socket(AF_INET, 0);
  setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one);
  connect(fd, (struct sockaddr *)&a, sizeof a);
  int sixty = 60;
  ATTEMPT("keepidle_app_owned", setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &sixty, sizeof sixty));
  printf("R keepidle_app_owned_effective %d\n", int_option(fd, IPPROTO_TCP, TCP_KEEPIDLE));
  close(fd);
  /* A socket connected without connect(): TCP Fast Open's sendto. Keepalive asked for after. */
  fd = tcp_socket(AF_INET, 0);
  errno = 0;
  ssize_t sent = sendto(fd, "x", 1, MSG_FASTOPEN, (struct sockaddr *)&a, sizeof a);
  printf("R fastopen_sendto %d %d\n", sent < 0 ? -1 : (int)sent, sent < 0 ? errno : 0);
  tuned("fastopen", fd);
  if (sent == 1) {
    ATTEMPT("fastopen_keepalive", setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one));
    printf("R fastopen_keepalive_effective %d\n", int_option(fd, SOL_SOCKET, SO_KEEPALIVE));
  }
  close(fd);
  /* The same through sendmsg, the address in its msghdr. */
  fd = tcp_socket(AF_INET, 0);
  {
    char byte = 'x';
    struct iovec part = {&byte, 1};
    struct msghdr message = {0};
    message.msg_name = &a;
    message.msg_namelen = sizeof a;
    message.msg_iov = &part;
    message.msg_iovlen = 1;
    errno = 0;
    sent = sendmsg(fd, &message, MSG_FASTOPEN | MSG_NOSIGNAL);
    printf("R fastopen_sendmsg %d %d\n", sent < 0 ? -1 : (int)sent, sent < 0 ? errno : 0);
    tuned("fastopen_sendmsg", fd);
  }
  close(fd);
  fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  ATTEMPT("nodelay_udp", setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &zero, sizeof zero));
  ATTEMPT("keepalive_udp", setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one));
  close(fd);

  /* A socket shared with a forked child: the child connects it, then the parent tries. */
  fd = tcp_socket(AF_INET, 0);
  fflush(stdout);
  pid_t child = fork();
  if (child == 0) {
    int rc = connect(fd, (struct sockaddr *)&a, sizeof a);
    _exit(rc == 0 ? 0 : 10 + errno % 100);
  }
  int status = 0;
  waitpid(child, &status, 0);
  printf("R fork_child_connect %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : 100 + WTERMSIG(status));
  ATTEMPT("fork_parent_connect", connect(fd, (struct sockaddr *)&a, sizeof a));
  tuned("fork_shared", fd);
  close(fd);

  /* Both connect the same socket at once (one wins; the other sees EISCONN or EALREADY). */
  fd = tcp_socket(AF_INET, 0);
  fflush(stdout);
  child = fork();
  if (child == 0) {
    int rc = connect(fd, (struct sockaddr *)&a, sizeof a);
    _exit(rc == 0 ? 0 : (errno == EISCONN || errno == EALREADY) ? 1 : 10 + errno % 100);
  }
  errno = 0;
  int parent_rc = connect(fd, (struct sockaddr *)&a, sizeof a);
  int parent_error = errno;
  waitpid(child, &status, 0);
  int child_code = WIFEXITED(status) ? WEXITSTATUS(status) : 100;
  int parent_code = parent_rc == 0 ? 0 : (parent_error == EISCONN || parent_error == EALREADY) ? 1 : 10 + parent_error;
  /* exactly one success, the other EISCONN/EALREADY (or both 0 if the second came after) */
  printf("R fork_concurrent_connects %d\n",
         (child_code == 0 && parent_code <= 1) || (parent_code == 0 && child_code <= 1) ? 0 : 1000 + child_code * 100 + parent_code);
  tuned("fork_concurrent", fd);
  close(fd);

  /* A socket passed over SCM_RIGHTS to a child, which connects it. */
  int pair[2];
  socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair);
  fflush(stdout);
  child = fork();
  if (child == 0) {
    close(pair[0]);
    char byte;
    struct iovec io = {&byte, 1};
    union {
      struct cmsghdr header;
      char space[CMSG_SPACE(sizeof(int))];
    } control;
    struct msghdr message;
    memset(&message, 0, sizeof message);
    message.msg_iov = &io;
    message.msg_iovlen = 1;
    message.msg_control = control.space;
    message.msg_controllen = sizeof control.space;
    if (recvmsg(pair[1], &message, 0) != 1) {
      _exit(20);
    }
    int received;
    memcpy(&received, CMSG_DATA(CMSG_FIRSTHDR(&message)), sizeof received);
    int rc = connect(received, (struct sockaddr *)&a, sizeof a);
    _exit(rc != 0 ? 10 + errno % 100 : nodelay_of(received) == 1 ? 0 : 1);
  }
  close(pair[1]);
  fd = tcp_socket(AF_INET, 0);
  {
    char byte = 'x';
    struct iovec io = {&byte, 1};
    union {
      struct cmsghdr header;
      char space[CMSG_SPACE(sizeof(int))];
    } control;
    memset(&control, 0, sizeof control);
    struct msghdr message;
    memset(&message, 0, sizeof message);
    message.msg_iov = &io;
    message.msg_iovlen = 1;
    message.msg_control = control.space;
    message.msg_controllen = sizeof control.space;
    struct cmsghdr *header = CMSG_FIRSTHDR(&message);
    header->cmsg_level = SOL_SOCKET;
    header->cmsg_type = SCM_RIGHTS;
    header->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(header), &fd, sizeof fd);
    sendmsg(pair[0], &message, 0);
  }
  waitpid(child, &status, 0);
  int code = WIFEXITED(status) ? WEXITSTATUS(status) : 100;
  printf("R scm_rights_connect %d\n", code >= 10 ? code : 0);
  printf("T scm_rights_connect nodelay=%d\n", code == 0 ? 1 : code == 1 ? 0 : -1);
  ATTEMPT("scm_rights_sender_connect", connect(fd, (struct sockaddr *)&a, sizeof a));
  close(fd);
  close(pair[0]);

  /* vfork + exec: the child connects in a new program. */
  char port_text[16];
  snprintf(port_text, sizeof port_text, "%d", s.port);
  char self[4096];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  self[n > 0 ? n : 0] = '\0';
  fflush(stdout);
  child = vfork();
  if (child == 0) {
    char *argv[] = {self, "connect_once", port_text, NULL};
    execv(self, argv);
    _exit(127);
  }
  waitpid(child, &status, 0);
  code = WIFEXITED(status) ? WEXITSTATUS(status) : 100;
  printf("R vfork_exec_connect %d\n", code == 3 ? 0 : code);
  printf("T vfork_exec_connect nodelay=%d\n", code == 0 ? 1 : code == 3 ? 0 : -1);

  /* vfork, connect in the child before exec (shares the parent's memory and descriptors). */
  fd = tcp_socket(AF_INET, 0);
  fflush(stdout);
  child = vfork();
  if (child == 0) {
    int rc = connect(fd, (struct sockaddr *)&a, sizeof a);
    _exit(rc == 0 ? 0 : 10 + errno % 100);
  }
  waitpid(child, &status, 0);
  printf("R vfork_child_connect %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : 100);
  tuned("vfork_child_connect", fd);
  close(fd);

  /* A thread with a descriptor table of its own (unshare(CLONE_FILES)): its descriptor number
   * names another socket in the rest of the process. Only its own socket is tuned. */
  int leader_socket = dup2(tcp_socket(AF_INET, 0), UNSHARED_FD);
  struct unshared_connect job = {s.port, -1, -1, -1};
  pthread_t unsharer;
  if (pthread_create(&unsharer, NULL, unshared_thread, &job) == 0) {
    pthread_join(unsharer, NULL);
    printf("R unshared_files_connect %d %d\n", job.rc, job.rc == 0 ? 0 : job.error);
    printf("T unshared_files_connect nodelay=%d\n", job.nodelay);
    printf("T unshared_files_other_socket nodelay=%d\n", nodelay_of(leader_socket));
  }
  close(leader_socket);

  /* Other ABIs: the filter traps only the native one. */
  attack_ia32(s.port);
  fflush(stdout);
  return 0;
}

/* ---- race: connect and close on the same descriptor numbers ---------------------------------- */

static volatile int race_stop;
static int race_port;
static int race_fds[4];
static volatile long race_counts[8]; /* 0 ok, 1 EBADF, 2 ENOTSOCK, 3 EISCONN/EALREADY, 4 other errors a race gives, 5 unexpected */
static volatile int race_unexpected_errno;

static void *race_connector(void *arg) {
  (void)arg;
  struct sockaddr_in a = loopback(race_port);
  unsigned seed = 1;
  while (!race_stop) {
    int fd = __atomic_load_n(&race_fds[rand_r(&seed) % 4], __ATOMIC_RELAXED);
    errno = 0;
    int rc = connect(fd, (struct sockaddr *)&a, sizeof a);
    int e = errno;
    int slot = rc == 0 ? 0 : e == EBADF ? 1 : e == ENOTSOCK ? 2 : (e == EISCONN || e == EALREADY) ? 3
               : (e == ECONNREFUSED || e == EINVAL || e == EAFNOSUPPORT || e == ECONNRESET || e == EINPROGRESS ||
                  e == EADDRNOTAVAIL) ? 4 : 5;
    if (slot == 5) {
      race_unexpected_errno = e;
    }
    __atomic_add_fetch(&race_counts[slot], 1, __ATOMIC_RELAXED);
  }
  return NULL;
}

/* Each closer owns two of the slots: two closers on one slot would both close its number, and
 * one's new descriptor would be lost, leaking until EMFILE. */
static void *race_closer(void *arg) {
  int first_slot = (int)(long)arg;
  unsigned seed = 7 + (unsigned)first_slot;
  while (!race_stop) {
    int slot = first_slot + rand_r(&seed) % 2;
    int old = __atomic_load_n(&race_fds[slot], __ATOMIC_RELAXED);
    close(old);
    /* The number comes back at once for something else: a TCP, UDP or unix socket, or a file. */
    int kind = rand_r(&seed) % 4;
    int fd = kind == 0 ? socket(AF_INET, SOCK_STREAM, 0)
             : kind == 1 ? socket(AF_INET, SOCK_DGRAM, 0)
             : kind == 2 ? socket(AF_UNIX, SOCK_STREAM, 0)
                         : open("/dev/null", O_RDONLY);
    __atomic_store_n(&race_fds[slot], fd, __ATOMIC_RELAXED);
  }
  return NULL;
}

static int mode_race(double seconds) {
  struct sink s;
  sink_start(&s, 0, 0, 1);
  race_port = s.port;
  for (int i = 0; i < 4; ++i) {
    race_fds[i] = socket(AF_INET, SOCK_STREAM, 0);
  }
  pthread_t threads[6];
  for (int i = 0; i < 4; ++i) {
    pthread_create(&threads[i], NULL, race_connector, NULL);
  }
  for (int i = 4; i < 6; ++i) {
    pthread_create(&threads[i], NULL, race_closer, (void *)(long)((i - 4) * 2));
  }
  sleep_ms((long)(seconds * 1000));
  race_stop = 1;
  for (int i = 0; i < 6; ++i) {
    pthread_join(threads[i], NULL);
  }
  printf("{\"ok\":%ld,\"ebadf\":%ld,\"enotsock\":%ld,\"isconn\":%ld,\"tcp_errors\":%ld,\"unexpected\":%ld,"
         "\"unexpected_errno\":%d}\n",
         race_counts[0], race_counts[1], race_counts[2], race_counts[3], race_counts[4], race_counts[5],
         race_unexpected_errno);
  /* Afterwards a fresh socket still connects and is tuned. */
  return connect_and_report("after_race");
}

/* ---- many threads connecting at once --------------------------------------------------------- */

static pthread_barrier_t start_line;
static int threads_port;
static volatile long threads_ok, threads_tuned;

static void *one_connect(void *arg) {
  (void)arg;
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_in a = loopback(threads_port);
  pthread_barrier_wait(&start_line);
  if (connect(fd, (struct sockaddr *)&a, sizeof a) == 0) {
    __atomic_add_fetch(&threads_ok, 1, __ATOMIC_RELAXED);
    if (nodelay_of(fd) == 1) {
      __atomic_add_fetch(&threads_tuned, 1, __ATOMIC_RELAXED);
    }
  }
  close(fd);
  return NULL;
}

static int mode_threads(int count) {
  struct sink s;
  sink_start(&s, 0, 0, 1);
  threads_port = s.port;
  pthread_barrier_init(&start_line, NULL, (unsigned)count);
  pthread_t *threads = calloc((size_t)count, sizeof *threads);
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, 64 * 1024);
  for (int i = 0; i < count; ++i) {
    if (pthread_create(&threads[i], &attr, one_connect, NULL) != 0) {
      die("pthread_create");
    }
  }
  for (int i = 0; i < count; ++i) {
    pthread_join(threads[i], NULL);
  }
  printf("{\"threads\":%d,\"connected\":%ld,\"tuned\":%ld}\n", count, threads_ok, threads_tuned);
  /* Without exit()'s destructors: the sink's detached threads may still be finishing, and
   * exit() racing them crashed in _dl_fini about once in 150 runs, with or without tcptune. */
  fflush(stdout);
  _exit(0);
}

static int mode_connect_once(int port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_in a = loopback(port);
  if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
    return 10 + errno % 100;
  }
  return nodelay_of(fd) == 1 ? 0 : 3;
}

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  const char *mode = argc > 1 ? argv[1] : "";
  if (strcmp(mode, "storm") == 0 && argc == 4) {
    return mode_storm(atoi(argv[2]), atol(argv[3]));
  }
  if (strcmp(mode, "signals") == 0 && argc == 6) {
    const int handling = strcmp(argv[3], "posix") == 0 ? 1 : strcmp(argv[3], "nonblocking") == 0 ? 2 : 0;
    return mode_signals(strcmp(argv[2], "restart") == 0, handling, atoi(argv[4]), atoi(argv[5]));
  }
  if (strcmp(mode, "nondumpable") == 0) {
    return mode_nondumpable();
  }
  if (strcmp(mode, "own_seccomp") == 0 && argc == 3) {
    return mode_own_seccomp(strcmp(argv[2], "listener") == 0);
  }
  if (strcmp(mode, "strict") == 0) {
    return mode_strict();
  }
  if (strcmp(mode, "term") == 0) {
    return mode_term();
  }
  if (strcmp(mode, "daemon") == 0 && argc == 5) {
    return mode_daemon(atoi(argv[2]), argv[3], atol(argv[4]));
  }
  if (strcmp(mode, "attack") == 0 && argc == 3) {
    return mode_attack(argv[2]);
  }
  if (strcmp(mode, "race") == 0 && argc == 3) {
    return mode_race(atof(argv[2]));
  }
  if (strcmp(mode, "threads") == 0 && argc == 3) {
    return mode_threads(atoi(argv[2]));
  }
  if (strcmp(mode, "connect") == 0) {
    return connect_and_report("connect");
  }
  if (strcmp(mode, "connect_once") == 0 && argc == 3) {
    return mode_connect_once(atoi(argv[2]));
  }
  fprintf(stderr, "usage: fault_probe storm|signals|nondumpable|own_seccomp|strict|term|daemon|attack|race|threads|connect|connect_once ...\n");
  return 2;
}
