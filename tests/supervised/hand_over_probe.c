/* hand_over_probe: the calls that tell a socket handed over by the supervisor (where pidfd_getfd
 * is refused) from one the kernel made for the program itself. Each mode prints lines that
 * hand_over_test.py compares with the same mode run without tcptune:
 *   R NAME RESULT      a call's result ("fd=N ..." or "errno=NAME"), the same with and without
 *   T NAME nodelay=N   TCP_NODELAY after the connect (1: tuned under a nodelay rule)
 *   I NAME INODE       the socket's inode, as tcptune's conn_open record gives it
 *
 *   hand_over_probe creation        socket() with every flag, errors, a descriptor limit
 *   hand_over_probe reuse PORT FD   a number closed and reused for a socket tcptune did not make
 *                                   (FD, inherited), then for one it did, each connected to PORT
 *   hand_over_probe rebind PORT     bind, close, bind the same port again; then bind, close,
 *                                   print "closed" and wait for a line on stdin, so that another
 *                                   process can bind the port while this one lives
 *   hand_over_probe again PORT      a nonblocking connect, polled, then connect called again on it
 *   hand_over_probe binds N PORT    N binds each of a UDP, a unix and a netlink socket, then one
 *                                   TCP socket connected to PORT
 *   hand_over_probe setuid PORT     (root) a socket, then setresuid(65534) and gid, then socket()
 *                                   and connect
 *   hand_over_probe netns PORT      (root) a socket, then unshare(CLONE_NEWNET), then socket()
 *                                   and connect
 * Exits 0, 2 on a usage error, 77 when a mode needs what this machine or user lacks. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/netlink.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sched.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

static const char* errno_name(int error) {
  switch (error) {
    case EAFNOSUPPORT: return "EAFNOSUPPORT";
    case EPROTONOSUPPORT: return "EPROTONOSUPPORT";
    case EINVAL: return "EINVAL";
    case EMFILE: return "EMFILE";
    case ENFILE: return "ENFILE";
    case EACCES: return "EACCES";
    case EPERM: return "EPERM";
    case ENETUNREACH: return "ENETUNREACH";
    case ECONNREFUSED: return "ECONNREFUSED";
    case EADDRINUSE: return "EADDRINUSE";
    case EBADF: return "EBADF";
    default: return "other";
  }
}

static int int_option(int fd, int level, int name) {
  int value = -1;
  socklen_t length = sizeof value;
  return getsockopt(fd, level, name, &value, &length) == 0 ? value : -1;
}

/* A created socket as the program sees it: its number, its descriptor and file flags, and what
 * kind of socket the kernel says it is. */
static void print_socket(const char* name, int fd) {
  if (fd < 0) {
    printf("R %s errno=%s\n", name, errno_name(errno));
    return;
  }
  printf("R %s fd=%d cloexec=%d nonblock=%d domain=%d type=%d protocol=%d\n", name, fd,
         (fcntl(fd, F_GETFD) & FD_CLOEXEC) != 0, (fcntl(fd, F_GETFL) & O_NONBLOCK) != 0,
         int_option(fd, SOL_SOCKET, SO_DOMAIN), int_option(fd, SOL_SOCKET, SO_TYPE),
         int_option(fd, SOL_SOCKET, SO_PROTOCOL));
}

static int mode_creation(void) {
  const struct {
    const char* name;
    int family, type, protocol;
  } calls[] = {
      {"tcp4", AF_INET, SOCK_STREAM, 0},
      {"tcp6_all_flags", AF_INET6, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, IPPROTO_TCP},
      {"tcp4_cloexec", AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0},
      {"tcp4_nonblock", AF_INET, SOCK_STREAM | SOCK_NONBLOCK, IPPROTO_TCP},
      {"unknown_family", 12345, SOCK_STREAM, 0},
      {"unknown_flag", AF_INET, SOCK_STREAM | 0x4000, 0},
      {"udp_protocol_on_stream", AF_INET, SOCK_STREAM, IPPROTO_UDP},
      {"udp", AF_INET, SOCK_DGRAM, 0},
  };
  int made[sizeof calls / sizeof calls[0]];
  for (size_t i = 0; i < sizeof calls / sizeof calls[0]; ++i) {
    made[i] = socket(calls[i].family, calls[i].type, calls[i].protocol);
    print_socket(calls[i].name, made[i]);
  }
  /* A hole in the table: the next socket takes the lowest free number, as the kernel's would. */
  close(made[1]);
  print_socket("lowest_free_number", socket(AF_INET, SOCK_STREAM, 0));
  /* The descriptor limit reached: the lowest free number is the limit. */
  const int lowest = dup(0);
  close(lowest);
  struct rlimit files;
  getrlimit(RLIMIT_NOFILE, &files);
  const struct rlimit full = {(rlim_t)lowest, files.rlim_max};
  if (setrlimit(RLIMIT_NOFILE, &full) == 0) {
    print_socket("at_limit_tcp4", socket(AF_INET, SOCK_STREAM, 0));
    print_socket("at_limit_tcp6_cloexec", socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0));
    print_socket("at_limit_udp", socket(AF_INET, SOCK_DGRAM, 0));
    setrlimit(RLIMIT_NOFILE, &files);
    print_socket("after_limit", socket(AF_INET, SOCK_STREAM, 0));
  }
  return 0;
}

static struct sockaddr_in loopback(int port) {
  struct sockaddr_in a;
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_port = htons((unsigned short)port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return a;
}

static unsigned long inode_of(int fd) {
  struct stat status;
  return fstat(fd, &status) == 0 ? (unsigned long)status.st_ino : 0;
}

static void connect_and_report(const char* name, int fd, int port) {
  const struct sockaddr_in a = loopback(port);
  errno = 0;
  const int rc = connect(fd, (const struct sockaddr*)&a, sizeof a);
  printf("R %s_connect %d %s\n", name, rc, rc == 0 ? "-" : errno_name(errno));
  printf("T %s nodelay=%d\n", name, int_option(fd, IPPROTO_TCP, TCP_NODELAY));
  printf("I %s %lu\n", name, inode_of(fd));
}

static int mode_reuse(int port, int inherited) {
  /* A number tcptune handed a socket over at, closed, then given to a socket it never made. */
  const int first = socket(AF_INET, SOCK_STREAM, 0);
  close(first);
  const int moved = dup2(inherited, first);
  close(inherited);
  printf("R reused_number %d\n", moved == first);
  connect_and_report("reused", moved, port);
  /* Then the same number closed and given to a new socket of the program's own. */
  const int second = socket(AF_INET, SOCK_STREAM, 0);
  close(second);
  const int third = socket(AF_INET, SOCK_STREAM, 0);
  printf("R reissued_number %d\n", third == second);
  connect_and_report("reissued", third, port);
  return 0;
}

static int mode_again(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  const struct sockaddr_in a = loopback(port);
  errno = 0;
  int rc = connect(fd, (const struct sockaddr*)&a, sizeof a);
  printf("R first_connect %d %s\n", rc == 0 ? 0 : -1,
         rc == 0 || errno == EINPROGRESS ? "-or-EINPROGRESS" : errno_name(errno));
  struct pollfd out = {fd, POLLOUT, 0};
  printf("R writable %d\n", poll(&out, 1, 5000));
  errno = 0;
  rc = connect(fd, (const struct sockaddr*)&a, sizeof a);
  printf("R again_connect %d %s\n", rc == 0 ? 0 : -1, rc == 0 || errno == EISCONN ? "-or-EISCONN" : errno_name(errno));
  printf("T again nodelay=%d\n", int_option(fd, IPPROTO_TCP, TCP_NODELAY));
  return 0;
}

static int bound_socket(const char* name, int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  const struct sockaddr_in a = loopback(port);
  errno = 0;
  const int rc = bind(fd, (const struct sockaddr*)&a, sizeof a);
  printf("R %s %d %s\n", name, rc, rc == 0 ? "-" : errno_name(errno));
  return fd;
}

static int mode_rebind(int port) {
  close(bound_socket("bind_first", port));
  close(bound_socket("bind_again", port)); /* the same port at once: the first socket's is free */
  close(bound_socket("bind_last", port));
  printf("closed\n");
  fflush(stdout);
  struct pollfd in = {0, POLLIN, 0};
  (void)poll(&in, 1, 20000);
  return 0;
}

/* Binds of sockets that are not TCP, each to a free address: how many succeeded, per kind. */
static int mode_binds(int count, int port) {
  int udp = 0, unix_local = 0, netlink = 0;
  for (int i = 0; i < count; ++i) {
    const struct sockaddr_in any_port = loopback(0);
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    udp += bind(fd, (const struct sockaddr*)&any_port, sizeof any_port) == 0;
    close(fd);
    struct sockaddr_un local;
    memset(&local, 0, sizeof local);
    local.sun_family = AF_UNIX;
    /* An abstract name (no file left behind), unique to this process and call. */
    const int length =
        snprintf(local.sun_path + 1, sizeof local.sun_path - 1, "hand_over_probe.%d.%d", (int)getpid(), i);
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    unix_local +=
        bind(fd, (const struct sockaddr*)&local, (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + length)) == 0;
    close(fd);
    struct sockaddr_nl kernel_link;
    memset(&kernel_link, 0, sizeof kernel_link);
    kernel_link.nl_family = AF_NETLINK;
    fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
    netlink += bind(fd, (const struct sockaddr*)&kernel_link, sizeof kernel_link) == 0;
    close(fd);
  }
  printf("R udp_binds %d\nR unix_binds %d\nR netlink_binds %d\n", udp, unix_local, netlink);
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  connect_and_report("tcp", fd, port);
  return 0;
}

static int mode_identity(const char* how, int port) {
  /* A socket first, as the program it was: what tcptune knows of this thread is then stale. */
  const int before = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  print_socket("before", before);
  close(before);
  if (strcmp(how, "setuid") == 0) {
    if (setresgid(65534, 65534, 65534) != 0 || setresuid(65534, 65534, 65534) != 0) {
      fprintf(stderr, "hand_over_probe: setresuid: %s\n", strerror(errno));
      return 77;
    }
  } else if (unshare(CLONE_NEWNET) != 0) {
    fprintf(stderr, "hand_over_probe: unshare(CLONE_NEWNET): %s\n", strerror(errno));
    return 77;
  }
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  print_socket(how, fd);
  connect_and_report(how, fd, port);
  return 0;
}

int main(int argc, char** argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  if (argc == 2 && strcmp(argv[1], "creation") == 0) {
    return mode_creation();
  }
  if (argc == 4 && strcmp(argv[1], "reuse") == 0) {
    return mode_reuse(atoi(argv[2]), atoi(argv[3]));
  }
  if (argc == 3 && strcmp(argv[1], "again") == 0) {
    return mode_again(atoi(argv[2]));
  }
  if (argc == 3 && strcmp(argv[1], "rebind") == 0) {
    return mode_rebind(atoi(argv[2]));
  }
  if (argc == 4 && strcmp(argv[1], "binds") == 0) {
    return mode_binds(atoi(argv[2]), atoi(argv[3]));
  }
  if (argc == 3 && (strcmp(argv[1], "setuid") == 0 || strcmp(argv[1], "netns") == 0)) {
    return mode_identity(argv[1], atoi(argv[2]));
  }
  fprintf(stderr,
          "usage: hand_over_probe creation | reuse PORT FD | again PORT | rebind PORT | binds N PORT | setuid PORT | "
          "netns PORT\n");
  return 2;
}
