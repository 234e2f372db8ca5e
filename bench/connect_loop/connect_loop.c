/* The program of bench/connect_loop/run.py: N loopback TCP connections, one after the other,
 * both ends in this one thread: socket + connect to its own listener, accept, close the client,
 * close the accepted end. Prints one JSON line: the loop's time (CLOCK_MONOTONIC, from the
 * first socket() to the last close()) and per connection pair, and the CPU time this thread and the
 * whole process (tcptune's worker thread included) spent meanwhile, which time stolen by other
 * load does not inflate. Under `tcptune run` both ends are
 * tuned, measured and logged (a conn_open and a conn_close each), which is what the runner
 * compares with the same loop without tcptune.
 *
 * With --floor, the program itself makes system calls the shim makes per pair, and nothing else:
 * `records` what the records need (a getsockname() of the client after its connect, a TCP_INFO
 * read of each end before its close), `getpid` a getpid() before each close (the check for a
 * vfork() child the shim made on every close of a TCP socket before its vfork hook). Its time
 * against the plain loop's is what those calls alone cost.
 *
 * With --cpu N the loop's thread runs on CPU N only, from the end of the warm-up: threads started
 * before (tcptune's worker, which the first connection starts) keep every CPU. On a VM whose
 * CPUs differ in speed, every arm's loop then runs on the same one.
 *
 *   tcptune_connect_loop [CONNECTIONS] [--warmup W] [--floor records|getpid] [--cpu N]
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <sched.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static double clock_s(clockid_t clock) {
  struct timespec t;
  clock_gettime(clock, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static double now_s(void) {
  return clock_s(CLOCK_MONOTONIC);
}

enum floor_calls { floor_none, floor_getpid, floor_records };
static enum floor_calls floor_calls = floor_none;

/* The calls the shim makes before it closes `fd`, for --floor. */
static void floor_before_close(int fd) {
  if (floor_calls == floor_none) {
    return;
  }
  if (floor_calls == floor_getpid) {
    (void)getpid();
  } else {
    struct tcp_info info;
    socklen_t length = sizeof info;
    (void)getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &length);
  }
}

/* One connection pair; 0, or the errno of the call that failed. */
static int one_pair(int listener, const struct sockaddr_in* address) {
  const int client = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (client < 0) {
    return errno;
  }
  if (connect(client, (const struct sockaddr*)address, sizeof *address) != 0) {
    const int error = errno;
    close(client);
    return error;
  }
  if (floor_calls == floor_records) {
    struct sockaddr_storage local;
    socklen_t length = sizeof local;
    (void)getsockname(client, (struct sockaddr*)&local, &length);
  }
  const int server = accept4(listener, NULL, NULL, SOCK_CLOEXEC);
  if (server < 0) {
    const int error = errno;
    close(client);
    return error;
  }
  floor_before_close(client);
  close(client);
  floor_before_close(server);
  close(server);
  return 0;
}

int main(int argc, char** argv) {
  long connections = 3000;
  long warmup = 20;
  long cpu = -1;
  for (int i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "--warmup") == 0 && i + 1 < argc) {
      warmup = strtol(argv[++i], NULL, 10);
    } else if (strcmp(argv[i], "--floor") == 0 && i + 1 < argc) {
      ++i;
      if (strcmp(argv[i], "getpid") == 0) {
        floor_calls = floor_getpid;
      } else if (strcmp(argv[i], "records") == 0) {
        floor_calls = floor_records;
      } else {
        fprintf(stderr, "connect_loop: --floor takes records or getpid\n");
        return 2;
      }
    } else if (strcmp(argv[i], "--cpu") == 0 && i + 1 < argc) {
      cpu = strtol(argv[++i], NULL, 10);
    } else if (argv[i][0] != '-') {
      connections = strtol(argv[i], NULL, 10);
    } else {
      fprintf(stderr, "usage: %s [CONNECTIONS] [--warmup W] [--floor records|getpid] [--cpu N]\n", argv[0]);
      return 2;
    }
  }
  if (connections <= 0 || warmup < 0) {
    fprintf(stderr, "connect_loop: CONNECTIONS must be positive, W not negative\n");
    return 2;
  }
  const int listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_in address;
  memset(&address, 0, sizeof address);
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof address;
  if (listener < 0 || bind(listener, (struct sockaddr*)&address, sizeof address) != 0 || listen(listener, 128) != 0 ||
      getsockname(listener, (struct sockaddr*)&address, &length) != 0) {
    fprintf(stderr, "connect_loop: listener: %s\n", strerror(errno));
    return 1;
  }
  /* Warm-up pairs first: the shim's core, its worker and the kernel's caches are then loaded,
   * as in a program that has been running a while; they are not timed. */
  const double warmup_start = now_s();
  for (long i = 0; i < warmup; ++i) {
    const int error = one_pair(listener, &address);
    if (error != 0) {
      fprintf(stderr, "connect_loop: warm-up connection %ld: %s\n", i, strerror(error));
      return 1;
    }
  }
  if (cpu >= 0) {
    cpu_set_t only;
    CPU_ZERO(&only);
    CPU_SET((int)cpu, &only);
    if (sched_setaffinity(0, sizeof only, &only) != 0) {
      fprintf(stderr, "connect_loop: --cpu %ld: %s\n", cpu, strerror(errno));
      return 1;
    }
  }
  const double thread_cpu_start = clock_s(CLOCK_THREAD_CPUTIME_ID);
  const double process_cpu_start = clock_s(CLOCK_PROCESS_CPUTIME_ID);
  const double start = now_s();
  const double warmup_seconds = start - warmup_start;
  for (long i = 0; i < connections; ++i) {
    const int error = one_pair(listener, &address);
    if (error != 0) {
      fprintf(stderr, "connect_loop: connection %ld: %s\n", i, strerror(error));
      return 1;
    }
  }
  const double seconds = now_s() - start;
  const double thread_cpu = clock_s(CLOCK_THREAD_CPUTIME_ID) - thread_cpu_start;
  const double process_cpu = clock_s(CLOCK_PROCESS_CPUTIME_ID) - process_cpu_start;
  close(listener);
  printf(
      "{\"connections\":%ld,\"warmup\":%ld,\"warmup_seconds\":%.6f,\"seconds\":%.6f,"
      "\"us_per_connection\":%.3f,\"connections_per_s\":%.0f,\"thread_cpu_seconds\":%.6f,"
      "\"process_cpu_seconds\":%.6f}\n",
      connections, warmup, warmup_seconds, seconds, 1e6 * seconds / (double)connections, (double)connections / seconds,
      thread_cpu, process_cpu);
  return 0;
}
