// What the system calls the supervisor makes for a trapped connect cost on this machine, each
// timed alone: a loop of one call on an unconnected TCP socket of this process's own, the least
// ns per call over 5 repetitions, printed as one JSON line. getppid is the cheapest system call,
// the price of entering the kernel at all; the other lines are the calls of a connect tuned by a
// rule that sets nodelay, a congestion control and both buffers (docs/benchmarks.md, "Supervised
// mode: cost"), less the seccomp receive, the still-pending check and the answer (ioctls on a
// seccomp listener); and one sock_diag dump of the records thread, not counted in the connect's.
//
//   tcptune_supervised_call_costs [LOOPS]
#define _GNU_SOURCE
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>

enum { kRepetitions = 5 };

static int g_socket = -1;
static int g_pidfd = -1;
static int g_netlink = -1;

static double now_ns(void) {
  struct timespec time;
  clock_gettime(CLOCK_MONOTONIC, &time);
  return (double)time.tv_sec * 1e9 + (double)time.tv_nsec;
}

static void call_getppid(void) {
  (void)syscall(SYS_getppid);
}
static void duplicate_and_close(void) {
  const int duplicate = (int)syscall(SYS_pidfd_getfd, g_pidfd, g_socket, 0);
  if (duplicate >= 0) {
    close(duplicate);
  }
}
static void read_int(int level, int name) {
  int value = 0;
  socklen_t length = sizeof value;
  (void)getsockopt(g_socket, level, name, &value, &length);
}
static void so_protocol(void) {
  read_int(SOL_SOCKET, SO_PROTOCOL);
}
static void tcp_info_read(void) {
  struct tcp_info info;
  socklen_t length = sizeof info;
  (void)getsockopt(g_socket, IPPROTO_TCP, TCP_INFO, &info, &length);
}
static void congestion_read(void) {
  char name[16];
  socklen_t length = sizeof name;
  (void)getsockopt(g_socket, IPPROTO_TCP, TCP_CONGESTION, name, &length);
}
static void meminfo_read(void) {
  unsigned int memory[SK_MEMINFO_VARS];
  socklen_t length = sizeof memory;
  (void)getsockopt(g_socket, SOL_SOCKET, SO_MEMINFO, memory, &length);
}
static void set_int(int level, int name, int value) {
  (void)setsockopt(g_socket, level, name, &value, sizeof value);
}
static void nodelay_set(void) {
  set_int(IPPROTO_TCP, TCP_NODELAY, 1);
}
static void congestion_set(void) {
  (void)setsockopt(g_socket, IPPROTO_TCP, TCP_CONGESTION, "reno", 4);
}
static void sndbuf_set(void) {
  set_int(SOL_SOCKET, SO_SNDBUF, 262144);
}
static void rcvbuf_set(void) {
  set_int(SOL_SOCKET, SO_RCVBUF, 262144);
}
static void cookie_read(void) {
  unsigned long long cookie = 0;
  socklen_t length = sizeof cookie;
  (void)getsockopt(g_socket, SOL_SOCKET, SO_COOKIE, &cookie, &length);
}
static void socket_fstat(void) {
  struct stat status;
  (void)fstat(g_socket, &status);
}
static void read_own_memory(void) {
  char from[16] = {0};
  char to[16];
  struct iovec local = {to, sizeof to};
  struct iovec remote = {from, sizeof from};
  (void)process_vm_readv(getpid(), &local, 1, &remote, 1, 0);
}

// One sock_diag dump of the IPv4 TCP sockets in the states the records thread asks for, as it
// makes one per address family followed (connection_watch.cpp): its cost is the walk of every TCP
// socket of the host, TIME_WAIT entries included, whatever it returns.
static void sock_diag_dump(void) {
  struct {
    struct nlmsghdr header;
    struct inet_diag_req_v2 body;
  } request = {0};
  request.header.nlmsg_len = sizeof request;
  request.header.nlmsg_type = SOCK_DIAG_BY_FAMILY;
  request.header.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
  request.body.sdiag_family = AF_INET;
  request.body.sdiag_protocol = IPPROTO_TCP;
  request.body.idiag_states = 1U << TCP_ESTABLISHED;
  if (send(g_netlink, &request, sizeof request, 0) < 0) {
    return;
  }
  static char reply[65536];
  for (;;) {
    ssize_t length = recv(g_netlink, reply, sizeof reply, 0);
    if (length <= 0) {
      return;
    }
    for (const struct nlmsghdr* message = (const void*)reply; NLMSG_OK(message, (size_t)length);
         message = NLMSG_NEXT(message, length)) {
      if (message->nlmsg_type == NLMSG_DONE || message->nlmsg_type == NLMSG_ERROR) {
        return;
      }
    }
  }
}

struct Call {
  const char* name;
  void (*run)(void);
  int per_connect;  // how many times a tuned connect makes it
};

static const struct Call kCalls[] = {
    {"getppid", call_getppid, 0},
    {"pidfd_getfd_and_close", duplicate_and_close, 1},
    {"so_protocol", so_protocol, 1},
    {"tcp_info", tcp_info_read, 1},
    {"process_vm_readv", read_own_memory, 1},
    {"tcp_congestion_read", congestion_read, 1},
    {"so_meminfo", meminfo_read, 2},
    {"tcp_nodelay_set", nodelay_set, 1},
    {"tcp_congestion_set", congestion_set, 1},
    {"so_sndbuf_set", sndbuf_set, 1},
    {"so_rcvbuf_set", rcvbuf_set, 1},
    {"so_cookie", cookie_read, 1},
    {"fstat", socket_fstat, 1},
    {"sock_diag_dump_inet", sock_diag_dump, 0},
};

int main(int argc, char** argv) {
  const long loops = argc > 1 ? strtol(argv[1], NULL, 10) : 20000;
  g_socket = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  g_pidfd = (int)syscall(SYS_pidfd_open, getpid(), 0);
  g_netlink = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
  if (g_socket < 0 || g_pidfd < 0 || g_netlink < 0 || loops <= 0) {
    perror("tcptune_supervised_call_costs: socket or pidfd_open");
    return 1;
  }
  double sum = 0;
  printf("{\"loops\":%ld,\"ns\":{", loops);
  for (size_t call = 0; call < sizeof kCalls / sizeof kCalls[0]; ++call) {
    double least = -1;
    // A dump takes milliseconds where a call takes a microsecond.
    const long runs = kCalls[call].run == sock_diag_dump ? (loops + 999) / 1000 : loops;
    for (int repetition = 0; repetition < kRepetitions; ++repetition) {
      const double start = now_ns();
      for (long i = 0; i < runs; ++i) {
        kCalls[call].run();
      }
      const double per_call = (now_ns() - start) / (double)runs;
      least = least < 0 || per_call < least ? per_call : least;
    }
    sum += least * kCalls[call].per_connect;
    printf("%s\"%s\":%.0f", call == 0 ? "" : ",", kCalls[call].name, least);
  }
  // The TCP sockets the dump walked, as far as this namespace says (/proc/net/sockstat).
  long in_use = -1;
  long time_wait = -1;
  FILE* sockstat = fopen("/proc/net/sockstat", "r");
  char line[256];
  while (sockstat != NULL && fgets(line, sizeof line, sockstat) != NULL) {
    (void)sscanf(line, "TCP: inuse %ld orphan %*d tw %ld", &in_use, &time_wait);
  }
  if (sockstat != NULL) {
    fclose(sockstat);
  }
  printf("},\"tcp_in_use\":%ld,\"tcp_time_wait\":%ld", in_use, time_wait);
  // What they add up to for one tuned connect (SO_MEMINFO is read before and after the rule).
  printf(",\"connect_calls_ns\":%.0f}\n", sum);
  return 0;
}
