/* Loopback connections with both ends in one C test program: a listener, and a connection to it
   whose one byte has gone through (so that both ends are measured), its accepted end closed.
   Any failure ends the program with exit status 1. */
#ifndef TCPTUNE_TESTS_LOOPBACK_PAIR_H
#define TCPTUNE_TESTS_LOOPBACK_PAIR_H

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

struct loopback_listener {
  int fd;
  int port;
};

static inline struct loopback_listener loopback_listen(void) {
  struct loopback_listener listener = {socket(AF_INET, SOCK_STREAM, 0), 0};
  struct sockaddr_in addr = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t len = sizeof addr;
  if (listener.fd < 0 || bind(listener.fd, (struct sockaddr*)&addr, sizeof addr) != 0 || listen(listener.fd, 16) != 0 ||
      getsockname(listener.fd, (struct sockaddr*)&addr, &len) != 0) {
    perror("listen");
    exit(1);
  }
  listener.port = ntohs(addr.sin_port);
  return listener;
}

/* The client's end, connected and past its first byte. */
static inline int loopback_connect_through(struct loopback_listener listener) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in addr = {.sin_family = AF_INET,
                             .sin_port = htons((unsigned short)listener.port),
                             .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  if (fd < 0 || connect(fd, (struct sockaddr*)&addr, sizeof addr) != 0) {
    perror("connect");
    exit(1);
  }
  const int accepted = accept(listener.fd, NULL, NULL);
  char byte = 'x';
  if (accepted < 0 || write(fd, &byte, 1) != 1 || read(accepted, &byte, 1) != 1) {
    perror("accept/write/read");
    exit(1);
  }
  close(accepted);
  return fd;
}

#endif
