/* A static program for the setuid tests, installed setuid root by setuid_test.py: prints its ids
 * and, given a port, connects to 127.0.0.1:PORT and prints TCP_NODELAY as its socket has it (1
 * when tuned by the default policy, 0 untuned), as one JSON line:
 *
 *   setuid_probe [PORT]   ->   {"ruid":65534,"euid":0,"nodelay":1}
 *
 * Exits 2 on any failure.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static int fail(const char* what) {
  fprintf(stderr, "setuid_probe: %s: %s\n", what, strerror(errno));
  return 2;
}

int main(int argc, char** argv) {
  int nodelay = -1;
  if (argc > 1) {
    const long port = strtol(argv[1], NULL, 10);
    if (port <= 0 || port > 65535) {
      fprintf(stderr, "usage: setuid_probe [PORT]\n");
      return 2;
    }
    const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
      return fail("socket");
    }
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((unsigned short)port)};
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof nodelay;
    if (connect(fd, (struct sockaddr*)&addr, sizeof addr) != 0) {
      return fail("connect");
    }
    if (getsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &nodelay, &length) != 0) {
      return fail("getsockopt");
    }
    close(fd);
  }
  printf("{\"ruid\":%u,\"euid\":%u,\"nodelay\":%d}\n", (unsigned)getuid(), (unsigned)geteuid(), nodelay);
  return fflush(stdout) == 0 ? 0 : fail("stdout");
}
