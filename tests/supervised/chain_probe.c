/* chain_probe: a link of a chain of processes, each making TCP connections over loopback, for
 * supervised runs whose processes are both musl and glibc programs (built from this one file by
 * musl-gcc at test time and by the C compiler of the build).
 *
 *   chain_probe PORT CONNECTS FORKED [run|exec CMD [ARGS...]]
 *
 * Connects CONNECTS times to 127.0.0.1:PORT and prints, for each connection, from its own
 * getsockopt, one JSON line:
 *   {"pid":N,"libc":"glibc"|"musl","forked":0|1,"fd":N,"local_port":N,"nodelay":N}
 * then, if FORKED is not 0, forks a child that does the same FORKED times ("forked":1) and waits
 * for it; then closes its connections. Last, `run` starts CMD as a child (fork, exec) and exits
 * with its status, `exec` execs CMD in place. Every socket is close-on-exec: each connection
 * belongs to the process that made it. Usage errors exit 2, failed calls 1 (with a line on
 * stderr); a child that does not end within 20 s is killed (exit 3).
 *
 * With CHAIN_PROBE_LOG naming a jsonl log, `exec` first waits (at most 10 s) until the log has a
 * conn_open record of this pid for each of its connections: the preloaded shim writes its
 * records from a thread that an exec ends, so without the wait a record still queued would be
 * lost, which is not what the test looks at. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum { kMostConnections = 16, kChildTimeoutS = 20 };

#ifdef __GLIBC__
static const char* const kLibc = "glibc";
#else
static const char* const kLibc = "musl";
#endif

static void die(const char* what) {
  fprintf(stderr, "chain_probe: %s: %s\n", what, strerror(errno));
  exit(1);
}

static int parse_number(const char* text, long low, long high, const char* what) {
  char* end = NULL;
  errno = 0;
  const long value = strtol(text, &end, 10);
  if (errno != 0 || end == text || *end != '\0' || value < low || value > high) {
    fprintf(stderr, "chain_probe: %s must be %ld to %ld, not '%s'\n", what, low, high, text);
    exit(2);
  }
  return (int)value;
}

static int connect_once(int port, int forked) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    die("socket");
  }
  struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((unsigned short)port)};
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, (struct sockaddr*)&addr, sizeof addr) != 0) {
    die("connect");
  }
  struct sockaddr_in local;
  socklen_t local_length = sizeof local;
  int nodelay = -1;
  socklen_t nodelay_length = sizeof nodelay;
  if (getsockname(fd, (struct sockaddr*)&local, &local_length) != 0 ||
      getsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &nodelay, &nodelay_length) != 0) {
    die("getsockname/getsockopt");
  }
  /* One line, one write: the processes of the chain share the pipe. */
  printf("{\"pid\":%d,\"libc\":\"%s\",\"forked\":%d,\"fd\":%d,\"local_port\":%d,\"nodelay\":%d}\n", (int)getpid(),
         kLibc, forked, fd, ntohs(local.sin_port), nodelay);
  fflush(stdout);
  return fd;
}

static void connect_times(int port, int count, int forked) {
  int fds[kMostConnections];
  for (int i = 0; i < count; ++i) {
    fds[i] = connect_once(port, forked);
  }
  for (int i = 0; i < count; ++i) {
    close(fds[i]);
  }
}

/* Whether `line` is a conn_open record of process `pid`. */
static int is_own_conn_open(const char* line, int pid) {
  char own[32];
  snprintf(own, sizeof own, "\"pid\":%d,", pid);
  return strstr(line, own) != NULL && strstr(line, "\"event\":\"conn_open\"") != NULL;
}

/* Waits until `log` has `count` conn_open records of this process, at most 10 s. */
static void wait_for_records(const char* log, int count) {
  const time_t deadline = time(NULL) + 10;
  for (;;) {
    int found = 0;
    FILE* file = fopen(log, "r");
    if (file != NULL) {
      char line[8192];
      while (fgets(line, sizeof line, file) != NULL) {
        found += is_own_conn_open(line, (int)getpid());
      }
      fclose(file);
    }
    if (found >= count || time(NULL) > deadline) {
      return;
    }
    const struct timespec pause = {0, 10 * 1000 * 1000};
    nanosleep(&pause, NULL);
  }
}

/* The child's exit status, or 3 if it does not end within kChildTimeoutS (then it is killed). */
static int wait_bounded(pid_t child) {
  const time_t deadline = time(NULL) + kChildTimeoutS;
  for (;;) {
    int status = 0;
    const pid_t done = waitpid(child, &status, WNOHANG);
    if (done == child) {
      return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    }
    if (done < 0 && errno != EINTR) {
      die("waitpid");
    }
    if (time(NULL) > deadline) {
      fprintf(stderr, "chain_probe: child %d did not end within %d s\n", (int)child, kChildTimeoutS);
      kill(child, SIGKILL);
      (void)waitpid(child, &status, 0);
      return 3;
    }
    const struct timespec pause = {0, 10 * 1000 * 1000};
    nanosleep(&pause, NULL);
  }
}

int main(int argc, char** argv) {
  if (argc < 4 || (argc > 4 && argc < 6) ||
      (argc >= 6 && strcmp(argv[4], "run") != 0 && strcmp(argv[4], "exec") != 0)) {
    fprintf(stderr, "usage: chain_probe PORT CONNECTS FORKED [run|exec CMD [ARGS...]]\n");
    return 2;
  }
  const int port = parse_number(argv[1], 1, 65535, "PORT");
  const int connects = parse_number(argv[2], 0, kMostConnections, "CONNECTS");
  const int forked = parse_number(argv[3], 0, kMostConnections, "FORKED");
  int fds[kMostConnections];
  for (int i = 0; i < connects; ++i) {
    fds[i] = connect_once(port, 0);
  }
  if (forked > 0) {
    const pid_t child = fork();
    if (child < 0) {
      die("fork");
    }
    if (child == 0) {
      connect_times(port, forked, 1);
      exit(0); /* not _exit: the shim writes what it still holds at exit */
    }
    const int status = wait_bounded(child);
    if (status != 0) {
      return status;
    }
  }
  for (int i = 0; i < connects; ++i) {
    close(fds[i]);
  }
  if (argc < 6) {
    return 0;
  }
  if (strcmp(argv[4], "exec") == 0) {
    if (getenv("CHAIN_PROBE_LOG") != NULL) {
      wait_for_records(getenv("CHAIN_PROBE_LOG"), connects);
    }
    execv(argv[5], argv + 5);
    die(argv[5]);
  }
  const pid_t child = fork();
  if (child < 0) {
    die("fork");
  }
  if (child == 0) {
    execv(argv[5], argv + 5);
    fprintf(stderr, "chain_probe: %s: %s\n", argv[5], strerror(errno));
    _exit(127);
  }
  return wait_bounded(child);
}
