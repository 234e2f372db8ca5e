/* A program built with musl (Debian's musl-tools), run by musl_program.py with and without
   LD_PRELOAD=libtcptune.so: its output and exit status must be the same, which shows that the
   first stage loads into it, forwards every call to musl and never loads the core (built for
   glibc). It exercises the hooked calls, with a TCP connection on loopback and a TCP socket
   passed over a unix socket (the calls that load the core under glibc). `maps` prints the
   lines of /proc/self/maps that name tcptune instead. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

static volatile sig_atomic_t g_signal;

static void on_signal(int number) {
  g_signal = number;
}

static void fail(const char* what) {
  printf("FAIL %s: %s\n", what, strerror(errno));
  exit(1);
}

static int mapped(const char* name) {
  FILE* maps = fopen("/proc/self/maps", "r");
  char line[4096];
  int found = 0;
  while (maps != NULL && fgets(line, sizeof line, maps) != NULL) {
    found |= strstr(line, name) != NULL;
  }
  if (maps != NULL) {
    fclose(maps);
  }
  return found;
}

static void print_maps(void) {
  FILE* maps = fopen("/proc/self/maps", "r");
  char line[4096];
  while (maps != NULL && fgets(line, sizeof line, maps) != NULL) {
    if (strstr(line, "tcptune") != NULL) {
      fputs(line, stdout);
    }
  }
}

static int pass_over_unix(int fd) {
  int pair[2];
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, pair) != 0) {
    fail("socketpair");
  }
  char byte = 'x';
  char control[CMSG_SPACE(sizeof(int))];
  memset(control, 0, sizeof control);
  struct iovec iov = {&byte, 1};
  struct msghdr message = {0};
  message.msg_iov = &iov;
  message.msg_iovlen = 1;
  message.msg_control = control;
  message.msg_controllen = sizeof control;
  struct cmsghdr* header = CMSG_FIRSTHDR(&message);
  header->cmsg_level = SOL_SOCKET;
  header->cmsg_type = SCM_RIGHTS;
  header->cmsg_len = CMSG_LEN(sizeof(int));
  memcpy(CMSG_DATA(header), &fd, sizeof fd);
  if (sendmsg(pair[0], &message, 0) != 1) {
    fail("sendmsg");
  }
  memset(control, 0, sizeof control);
  message.msg_controllen = sizeof control;
  if (recvmsg(pair[1], &message, 0) != 1) {
    fail("recvmsg");
  }
  int received = -1;
  memcpy(&received, CMSG_DATA(CMSG_FIRSTHDR(&message)), sizeof received);
  close(pair[0]);
  close(pair[1]);
  return received;
}

int main(int argc, char** argv) {
  if (argc > 1 && strcmp(argv[1], "maps") == 0) {
    print_maps();
    return 0;
  }
  signal(SIGUSR1, on_signal);
  raise(SIGUSR1);
  printf("signal handler ran for %d\n", g_signal);

  const int listener = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in address = {0};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof address;
  if (listener < 0 || bind(listener, (struct sockaddr*)&address, sizeof address) != 0 || listen(listener, 4) != 0 ||
      getsockname(listener, (struct sockaddr*)&address, &length) != 0) {
    fail("listener");
  }
  const int client = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, IPPROTO_TCP);
  if (client < 0 || connect(client, (struct sockaddr*)&address, sizeof address) != 0) {
    fail("connect");
  }
  const int server = accept4(listener, NULL, NULL, SOCK_CLOEXEC);
  if (server < 0) {
    fail("accept4");
  }
  int nodelay = -1;
  socklen_t option_length = sizeof nodelay;
  getsockopt(client, IPPROTO_TCP, TCP_NODELAY, &nodelay, &option_length);
  printf("client TCP_NODELAY %d\n", nodelay);

  char buffer[64] = {0};
  struct iovec parts[2] = {{"pi", 2}, {"ng", 2}};
  if (writev(client, parts, 2) != 4 || read(server, buffer, 4) != 4) {
    fail("writev/read");
  }
  printf("server read %.4s\n", buffer);
  struct pollfd waiting = {client, POLLIN, 0};
  if (send(server, "pong", 4, 0) != 4 || poll(&waiting, 1, 5000) != 1 || recv(client, buffer, 4, 0) != 4) {
    fail("send/poll/recv");
  }
  printf("client received %.4s\n", buffer);

  const int epoll = epoll_create1(EPOLL_CLOEXEC);
  struct epoll_event event = {.events = EPOLLOUT, .data.fd = server};
  struct epoll_event ready;
  if (epoll < 0 || epoll_ctl(epoll, EPOLL_CTL_ADD, server, &event) != 0 || epoll_wait(epoll, &ready, 1, 5000) != 1) {
    fail("epoll");
  }
  fd_set readable;
  FD_ZERO(&readable);
  FD_SET(server, &readable);
  struct timeval no_wait = {0, 0};
  printf("select finds %d readable\n", select(server + 1, &readable, NULL, NULL, &no_wait));

  const int copy = dup(client);
  const int moved = fcntl(copy, F_DUPFD_CLOEXEC, 20);
  printf("dup and F_DUPFD_CLOEXEC: %s, flags O_NONBLOCK %d\n", copy >= 0 && moved >= 20 ? "ok" : "failed",
         (fcntl(moved, F_GETFL) & O_NONBLOCK) != 0);
  close(copy);
  close(moved);

  const int received = pass_over_unix(client);
  int type = 0;
  option_length = sizeof type;
  getsockopt(received, SOL_SOCKET, SO_TYPE, &type, &option_length);
  printf("received a descriptor over a unix socket: stream %d\n", type == SOCK_STREAM);
  dprintf(received, "over the passed descriptor\n");
  if (read(server, buffer, sizeof buffer) <= 0) {
    fail("read of the passed descriptor's line");
  }
  close(received);

  errno = 0;
  const int bad = close(-1);
  printf("close(-1) %d errno %s\n", bad, errno == EBADF ? "EBADF" : "other");
  printf("the tuning core is mapped: %s\n", mapped("libtcptune-core") ? "yes" : "no");
  fflush(stdout);
  close(epoll);
  close(client);
  close(server);
  close(listener);
  return 3;
}
