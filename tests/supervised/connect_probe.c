/* A static client for the supervised Prometheus textfile test: connections to loopback ports,
 * counted per port, some closed at once and the rest held until stdin closes, so that the
 * textfile can be read while the program still runs.
 *
 *   connect_probe PORT COUNT [PORT COUNT ...]
 *
 * Connects COUNT times to 127.0.0.1:PORT for each pair; of each pair's connections the first
 * half is closed right away. Then prints "ready PID" and waits for stdin to close (at most
 * 20 s) before it exits 0. Exits 2 on any failure.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

enum { kMostConnections = 64, kStdinTimeoutMs = 20000 };

static void die(const char* what) {
  fprintf(stderr, "connect_probe: %s: %s\n", what, strerror(errno));
  exit(2);
}

static long parse_number(const char* text, long low, long high, const char* what) {
  char* end = NULL;
  errno = 0;
  const long value = strtol(text, &end, 10);
  if (errno != 0 || end == text || *end != '\0' || value < low || value > high) {
    fprintf(stderr, "connect_probe: %s must be %ld to %ld, not '%s'\n", what, low, high, text);
    exit(2);
  }
  return value;
}

static int connect_to(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    die("socket");
  }
  struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((unsigned short)port)};
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, (struct sockaddr*)&addr, sizeof addr) != 0) {
    die("connect");
  }
  return fd;
}

int main(int argc, char** argv) {
  if (argc < 3 || argc % 2 != 1) {
    fprintf(stderr, "usage: connect_probe PORT COUNT [PORT COUNT ...]\n");
    return 2;
  }
  int held[kMostConnections];
  int held_count = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    const int port = (int)parse_number(argv[i], 1, 65535, "PORT");
    const long count = parse_number(argv[i + 1], 1, kMostConnections, "COUNT");
    for (long n = 0; n < count; ++n) {
      const int fd = connect_to(port);
      if (n < count / 2) {
        close(fd);
      } else if (held_count < kMostConnections) {
        held[held_count++] = fd;
      } else {
        fprintf(stderr, "connect_probe: more than %d connections to hold\n", kMostConnections);
        return 2;
      }
    }
  }
  printf("ready %d\n", (int)getpid());
  fflush(stdout);
  struct pollfd in = {.fd = STDIN_FILENO, .events = POLLIN};
  char buffer[256];
  for (;;) {
    const int ready = poll(&in, 1, kStdinTimeoutMs);
    if (ready == 0) {
      fprintf(stderr, "connect_probe: stdin still open after %d ms\n", kStdinTimeoutMs);
      return 2;
    }
    if (ready < 0) {
      if (errno == EINTR) {
        continue;
      }
      die("poll");
    }
    const ssize_t n = read(STDIN_FILENO, buffer, sizeof buffer);
    if (n == 0) {
      break;
    }
    if (n < 0 && errno != EINTR) {
      die("read stdin");
    }
  }
  for (int i = 0; i < held_count; ++i) {
    close(held[i]);
  }
  return 0;
}
