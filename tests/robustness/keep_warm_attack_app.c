// A request/response app for the keep-warm Nagle tests: opens a connection (connects, or
// listens and accepts one), sends a burst that opens the congestion window, then, round after
// round, pauses PAUSE_MS, sends one 100-byte message "<...$" and waits for the peer's one-byte
// reply. The message ends each round in a different way (MODES, comma-separated, taken in
// turn): one write, MSG_MORE parts, writev, sendmsg, sendmmsg, sendfile, splice, a corked
// message, an empty write or uncork first, and so on. After each message it reads TCP_NODELAY
// back, and around the call that ends the message it checks errno is left alone.
// Usage: keep_warm_attack_app PORT|listen MODES ROUNDS PAUSE_MS [nodelay0]
// Prints the port first when listening; at the end one JSON line per mode.
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/sockios.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define MAX_MODES 32

static void die(const char* what) {
  fprintf(stderr, "%s: %s\n", what, strerror(errno));
  exit(2);
}
static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}
static void sleep_ms(int ms) {
  struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&t, &t) != 0 && errno == EINTR) {
  }
}
static void write_all(int fd, const char* p, size_t n) {
  while (n > 0) {
    ssize_t k = write(fd, p, n);
    if (k < 0) {
      if (errno == EINTR) continue;
      die("write");
    }
    p += k;
    n -= (size_t)k;
  }
}
static int get_nodelay(int fd) {
  int v = -1;
  socklen_t l = sizeof v;
  if (getsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &v, &l) != 0) die("getsockopt");
  return v;
}
static void set_int(int fd, int level, int name, int v) {
  if (setsockopt(fd, level, name, &v, sizeof v) != 0) die("setsockopt");
}
static void wait_acked(int fd) {
  for (int i = 0; i < 500; ++i) {
    int q = 0;
    ioctl(fd, SIOCOUTQ, &q);
    if (q == 0) return;
    sleep_ms(10);
  }
}

int main(int argc, char** argv) {
  if (argc < 5) {
    fprintf(stderr, "usage: %s PORT|listen MODES ROUNDS PAUSE_MS [nodelay0]\n", argv[0]);
    return 2;
  }
  char* modes[MAX_MODES];
  int mode_count = 0;
  for (char* m = strtok(argv[2], ","); m != NULL && mode_count < MAX_MODES; m = strtok(NULL, ",")) modes[mode_count++] = m;
  const int rounds = atoi(argv[3]);
  const int pause = atoi(argv[4]);
  int fd;
  struct sockaddr_in a;
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (strcmp(argv[1], "listen") == 0) {
    int l = socket(AF_INET, SOCK_STREAM, 0);
    // Ethernet-sized segments, so the burst opens the window above 10 segments.
    set_int(l, IPPROTO_TCP, TCP_MAXSEG, 1400);
    if (bind(l, (struct sockaddr*)&a, sizeof a) != 0 || listen(l, 1) != 0) die("listen");
    socklen_t al = sizeof a;
    getsockname(l, (struct sockaddr*)&a, &al);
    printf("%d\n", ntohs(a.sin_port));
    fflush(stdout);
    fd = accept(l, NULL, NULL);
    if (fd < 0) die("accept");
    close(l);
  } else {
    fd = socket(AF_INET, SOCK_STREAM, 0);
    set_int(fd, IPPROTO_TCP, TCP_MAXSEG, 1400);
    a.sin_port = htons((unsigned short)atoi(argv[1]));
    if (connect(fd, (struct sockaddr*)&a, sizeof a) != 0) die("connect");
  }
  if (argc > 5 && strcmp(argv[5], "nodelay0") == 0) set_int(fd, IPPROTO_TCP, TCP_NODELAY, 0);
  const int want_nodelay = get_nodelay(fd);
  static char burst[1 << 16];
  memset(burst, 'x', sizeof burst);
  for (int i = 0; i < 80; ++i) write_all(fd, burst, sizeof burst);
  write_all(fd, "#", 1);
  wait_acked(fd);
  char reply;
  if (read(fd, &reply, 1) != 1) die("burst reply");

  char msg[100];
  msg[0] = '<';
  for (int i = 1; i < 99; ++i) msg[i] = (char)('a' + i % 26);
  msg[99] = '$';
  char path[] = "/tmp/keep_warm_attack_XXXXXX";
  int file = mkstemp(path);
  if (file < 0) die("mkstemp");
  unlink(path);
  write_all(file, msg, sizeof msg);
  int pipefd[2];
  if (pipe(pipefd) != 0) die("pipe");

  double total[MAX_MODES] = {0}, worst[MAX_MODES] = {0};
  int count[MAX_MODES] = {0}, slow[MAX_MODES] = {0}, bad_nodelay[MAX_MODES] = {0}, clobbered[MAX_MODES] = {0};
  for (int r = 0; r < rounds; ++r) {
    const int k = r % mode_count;
    const char* mode = modes[k];
    sleep_ms(pause);
    const double t0 = now_ms();
    ssize_t n = 0;
    int saved = 0;
#define LAST(call) (errno = EDOM, n += (call), saved = errno)
    if (!strcmp(mode, "write")) {
      LAST(write(fd, msg, 100));
    } else if (!strcmp(mode, "write2")) {  // Nagle's own stall: the 90 bytes wait for the 10's ACK
      write_all(fd, msg, 10);
      n = 10;
      LAST(write(fd, msg + 10, 90));
    } else if (!strcmp(mode, "send")) {
      LAST(send(fd, msg, 100, 0));
    } else if (!strcmp(mode, "more")) {
      n = send(fd, msg, 40, MSG_MORE);
      LAST(send(fd, msg + 40, 60, 0));
    } else if (!strcmp(mode, "more3")) {
      n = send(fd, msg, 10, MSG_MORE);
      n += send(fd, msg + 10, 30, MSG_MORE);
      LAST(send(fd, msg + 40, 60, 0));
    } else if (!strcmp(mode, "more_then_empty")) {
      n = send(fd, msg, 100, MSG_MORE);
      LAST(send(fd, msg, 0, 0));
    } else if (!strcmp(mode, "writev")) {
      struct iovec v[3] = {{msg, 10}, {msg + 10, 30}, {msg + 40, 60}};
      LAST(writev(fd, v, 3));
    } else if (!strcmp(mode, "sendmsg")) {
      struct iovec v[3] = {{msg, 10}, {msg + 10, 30}, {msg + 40, 60}};
      struct msghdr h;
      memset(&h, 0, sizeof h);
      h.msg_iov = v;
      h.msg_iovlen = 3;
      LAST(sendmsg(fd, &h, 0));
    } else if (!strcmp(mode, "sendmmsg")) {
      struct iovec v[2] = {{msg, 40}, {msg + 40, 60}};
      struct mmsghdr m[2];
      memset(m, 0, sizeof m);
      m[0].msg_hdr.msg_iov = &v[0];
      m[0].msg_hdr.msg_iovlen = 1;
      m[1].msg_hdr.msg_iov = &v[1];
      m[1].msg_hdr.msg_iovlen = 1;
      errno = EDOM;
      if (sendmmsg(fd, m, 2, 0) != 2) die("sendmmsg");
      saved = errno;
      n = (ssize_t)(m[0].msg_len + m[1].msg_len);
    } else if (!strcmp(mode, "sendfile")) {
      off_t off = 0;
      LAST(sendfile(fd, file, &off, 100));
    } else if (!strcmp(mode, "splice")) {
      write_all(pipefd[1], msg, 100);
      LAST(splice(pipefd[0], NULL, fd, NULL, 100, 0));
    } else if (!strcmp(mode, "splice_more")) {
      write_all(pipefd[1], msg, 100);
      n = splice(pipefd[0], NULL, fd, NULL, 40, SPLICE_F_MORE);
      LAST(splice(pipefd[0], NULL, fd, NULL, 60, 0));
    } else if (!strcmp(mode, "cork")) {
      set_int(fd, IPPROTO_TCP, TCP_CORK, 1);
      write_all(fd, msg, 40);
      write_all(fd, msg + 40, 60);
      n = 100;
      int off = 0;
      errno = EDOM;
      if (setsockopt(fd, IPPROTO_TCP, TCP_CORK, &off, sizeof off) != 0) die("uncork");
      saved = errno;
    } else if (!strcmp(mode, "cork_more")) {
      set_int(fd, IPPROTO_TCP, TCP_CORK, 1);
      n = send(fd, msg, 40, MSG_MORE);
      n += send(fd, msg + 40, 60, 0);
      int off = 0;
      errno = EDOM;
      if (setsockopt(fd, IPPROTO_TCP, TCP_CORK, &off, sizeof off) != 0) die("uncork");
      saved = errno;
    } else if (!strcmp(mode, "empty_send_first")) {
      if (send(fd, msg, 0, 0) != 0) die("empty send");
      LAST(write(fd, msg, 100));
    } else if (!strcmp(mode, "empty_writev_first")) {
      struct iovec v[1] = {{msg, 0}};
      if (writev(fd, v, 1) != 0) die("empty writev");
      LAST(write(fd, msg, 100));
    } else if (!strcmp(mode, "empty_cork_first")) {
      set_int(fd, IPPROTO_TCP, TCP_CORK, 1);
      set_int(fd, IPPROTO_TCP, TCP_CORK, 0);
      LAST(write(fd, msg, 100));
    } else {
      fprintf(stderr, "unknown mode %s\n", mode);
      return 2;
    }
#undef LAST
    if (n != 100) die(mode);
    if (saved != EDOM) clobbered[k]++;
    if (get_nodelay(fd) != want_nodelay) bad_nodelay[k]++;
    if (read(fd, &reply, 1) != 1) die("reply");
    const double rtt = now_ms() - t0;
    total[k] += rtt;
    if (rtt > worst[k]) worst[k] = rtt;
    if (rtt > 20.0) slow[k]++;
    count[k]++;
  }
  for (int k = 0; k < mode_count; ++k) {
    printf("{\"mode\":\"%s\",\"rounds\":%d,\"mean_ms\":%.3f,\"worst_ms\":%.3f,\"slow\":%d,\"bad_nodelay\":%d,"
           "\"errno_clobbered\":%d,\"nodelay\":%d}\n",
           modes[k], count[k], count[k] ? total[k] / count[k] : 0.0, worst[k], slow[k], bad_nodelay[k], clobbered[k],
           want_nodelay);
  }
  fflush(stdout);
  shutdown(fd, SHUT_WR);
  while (read(fd, &reply, 1) > 0) {
  }
  close(fd);
  return 0;
}
