/* option_probe: one TCP connection over loopback, and the options in effect on it read from
 * inside with getsockopt, as one JSON line per side.
 *
 *   option_probe server PORT [TIMEOUT_S]
 *     listens on 127.0.0.1:PORT (0: an ephemeral port) and prints
 *       {"side":"server","listening":PORT}
 *     accepts one connection and prints the options of the ACCEPTED socket
 *       {"side":"server","pid":N,"ppid":N,"local_port":N,"peer_port":N,"nodelay":N,...}
 *     then reads until the peer closes, and exits 0.
 *
 *   option_probe client HOST PORT [TIMEOUT_S]
 *     connects (HOST is a numeric IPv4 address), prints the options of its socket
 *       {"side":"client","pid":N,"ppid":N,"local_port":N,"peer_port":N,"nodelay":N,...}
 *     then waits for a line (or end of file) on stdin, closes, and exits 0.
 *
 * Every wait is bounded by TIMEOUT_S (default 20 s); a wait that runs out exits 3 with a
 * message on stderr. Usage errors exit 2, failed system calls exit 1. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/ip.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static int timeout_ms = 20000;

static void die(const char* what) {
  fprintf(stderr, "option_probe: %s: %s\n", what, strerror(errno));
  exit(1);
}

static int parse_number(const char* text, long min, long max, const char* what) {
  char* end = NULL;
  errno = 0;
  const long value = strtol(text, &end, 10);
  if (errno != 0 || end == text || *end != '\0' || value < min || value > max) {
    fprintf(stderr, "option_probe: %s: '%s' is not a number from %ld to %ld\n", what, text, min, max);
    exit(2);
  }
  return (int)value;
}

static long long now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Waits until fd is readable (or hung up) before the deadline; exits 3 when it is not. */
static void wait_readable(int fd, long long deadline, const char* what) {
  for (;;) {
    const long long left = deadline - now_ms();
    if (left <= 0) {
      fprintf(stderr, "option_probe: timed out after %d ms waiting for %s\n", timeout_ms, what);
      exit(3);
    }
    struct pollfd p = {.fd = fd, .events = POLLIN};
    const int n = poll(&p, 1, (int)left);
    if (n > 0) {
      return;
    }
    if (n < 0 && errno != EINTR) {
      die("poll");
    }
  }
}

static int get_int(int fd, int level, int option) {
  int value = -1;
  socklen_t len = sizeof value;
  if (getsockopt(fd, level, option, &value, &len) != 0) {
    return -1;
  }
  return value;
}

static int port_of(int fd, int peer) {
  struct sockaddr_in addr;
  socklen_t len = sizeof addr;
  const int rc = peer ? getpeername(fd, (struct sockaddr*)&addr, &len) : getsockname(fd, (struct sockaddr*)&addr, &len);
  return rc == 0 ? ntohs(addr.sin_port) : -1;
}

static void print_options(int fd, const char* side) {
  char congestion[32] = {0};
  socklen_t len = sizeof congestion - 1;
  if (getsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, congestion, &len) != 0) {
    snprintf(congestion, sizeof congestion, "?");
  }
  for (size_t i = 0; i < sizeof congestion; ++i) {
    const char c = congestion[i];
    if (c != '\0' && (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '_' && c != '-') {
      congestion[i] = '?'; /* names are [a-z0-9_-]; anything else would break the JSON */
    }
  }
  printf(
      "{\"side\":\"%s\",\"pid\":%d,\"ppid\":%d,\"local_port\":%d,\"peer_port\":%d,"
      "\"nodelay\":%d,\"sndbuf\":%d,\"rcvbuf\":%d,"
      "\"congestion\":\"%s\",\"keepalive\":%d,\"keepidle\":%d,\"keepintvl\":%d,\"keepcnt\":%d,"
      "\"user_timeout\":%d,\"notsent_lowat\":%d,\"tos\":%d}\n",
      side, (int)getpid(), (int)getppid(), port_of(fd, 0), port_of(fd, 1), get_int(fd, IPPROTO_TCP, TCP_NODELAY),
      get_int(fd, SOL_SOCKET, SO_SNDBUF), get_int(fd, SOL_SOCKET, SO_RCVBUF), congestion,
      get_int(fd, SOL_SOCKET, SO_KEEPALIVE), get_int(fd, IPPROTO_TCP, TCP_KEEPIDLE),
      get_int(fd, IPPROTO_TCP, TCP_KEEPINTVL), get_int(fd, IPPROTO_TCP, TCP_KEEPCNT),
      get_int(fd, IPPROTO_TCP, TCP_USER_TIMEOUT), get_int(fd, IPPROTO_TCP, TCP_NOTSENT_LOWAT),
      get_int(fd, IPPROTO_IP, IP_TOS));
  fflush(stdout);
}

static int server(int port) {
  const int listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (listener < 0) {
    die("socket");
  }
  const int one = 1;
  if (setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0) {
    die("setsockopt SO_REUSEADDR");
  }
  struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((unsigned short)port)};
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (bind(listener, (struct sockaddr*)&addr, sizeof addr) != 0) {
    die("bind");
  }
  if (listen(listener, 1) != 0) {
    die("listen");
  }
  printf("{\"side\":\"server\",\"listening\":%d}\n", port_of(listener, 0));
  fflush(stdout);
  const long long deadline = now_ms() + timeout_ms;
  wait_readable(listener, deadline, "a connection");
  const int conn = accept(listener, NULL, NULL);
  if (conn < 0) {
    die("accept");
  }
  close(listener);
  print_options(conn, "server");
  char buffer[4096];
  for (;;) {
    wait_readable(conn, deadline, "the client to close");
    const ssize_t n = read(conn, buffer, sizeof buffer);
    if (n == 0) {
      break;
    }
    if (n < 0 && errno != EINTR) {
      die("read");
    }
  }
  close(conn);
  return 0;
}

static int client(const char* host, int port) {
  struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((unsigned short)port)};
  if (inet_pton(AF_INET, host, &addr.sin_addr) != 1) {
    fprintf(stderr, "option_probe: '%s' is not a numeric IPv4 address\n", host);
    return 2;
  }
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    die("socket");
  }
  if (connect(fd, (struct sockaddr*)&addr, sizeof addr) != 0) {
    die("connect");
  }
  print_options(fd, "client");
  const long long deadline = now_ms() + timeout_ms;
  char buffer[256];
  for (;;) {
    wait_readable(STDIN_FILENO, deadline, "a line on stdin");
    const ssize_t n = read(STDIN_FILENO, buffer, sizeof buffer);
    if (n == 0 || (n > 0 && memchr(buffer, '\n', (size_t)n) != NULL)) {
      break;
    }
    if (n < 0 && errno != EINTR) {
      die("read stdin");
    }
  }
  close(fd);
  return 0;
}

int main(int argc, char** argv) {
  if (argc >= 3 && argc <= 4 && strcmp(argv[1], "server") == 0) {
    if (argc == 4) {
      timeout_ms = 1000 * parse_number(argv[3], 1, 3600, "TIMEOUT_S");
    }
    return server(parse_number(argv[2], 0, 65535, "PORT"));
  }
  if (argc >= 4 && argc <= 5 && strcmp(argv[1], "client") == 0) {
    if (argc == 5) {
      timeout_ms = 1000 * parse_number(argv[4], 1, 3600, "TIMEOUT_S");
    }
    return client(argv[2], parse_number(argv[3], 1, 65535, "PORT"));
  }
  fprintf(stderr,
          "usage: option_probe server PORT [TIMEOUT_S]\n"
          "       option_probe client HOST PORT [TIMEOUT_S]\n");
  return 2;
}
