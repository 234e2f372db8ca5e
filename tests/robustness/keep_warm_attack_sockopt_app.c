// The app side of keep_warm_attack_sockopt.py: on a kept-warm connection with heartbeats
// flowing, TCP_NODELAY and TCP_CORK set in every way an app may set them, then read back.
// connect, burst, then ROUNDS rounds of: set TCP_NODELAY to a new value (optlen 4 or 8), try
// it with a bad pointer, a short optlen and a null pointer (the kernel's EFAULT/EINVAL must
// come back and change nothing), pause 15 ms (heartbeats), send "<HEAD" with MSG_MORE and
// ">" and check TCP_NODELAY reads back what was last set. Then a corked message set from
// signal handlers: SIGUSR1's handler corks, "<SIG" ... 400 ms ... "NAL>", SIGUSR2's handler
// uncorks (and, before it, the same cork set outside a handler). Prints one JSON line.
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <linux/sockios.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static int fd;
static volatile sig_atomic_t handler_errors;

static void sleep_ms(int ms) {
  struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&t, &t) != 0 && errno == EINTR) {
  }
}
static void write_all(const char* p, size_t n, int flags) {
  while (n > 0) {
    ssize_t k = send(fd, p, n, flags);
    if (k < 0) {
      if (errno == EINTR) continue;
      perror("send");
      exit(2);
    }
    p += k;
    n -= (size_t)k;
  }
}
static int get(int name) {
  int v = -1;
  socklen_t l = sizeof v;
  if (getsockopt(fd, IPPROTO_TCP, name, &v, &l) != 0) return -1;
  return v;
}
static void on_cork(int sig) {
  int saved = errno;
  int v = sig == SIGUSR1 ? 1 : 0;
  if (setsockopt(fd, IPPROTO_TCP, TCP_CORK, &v, sizeof v) != 0) handler_errors++;
  errno = saved;
}

int main(int argc, char** argv) {
  if (argc < 3) return 2;
  const int port = atoi(argv[1]);
  const int rounds = atoi(argv[2]);
  fd = socket(AF_INET, SOCK_STREAM, 0);
  int mss = 1400;
  setsockopt(fd, IPPROTO_TCP, TCP_MAXSEG, &mss, sizeof mss);
  struct sockaddr_in a;
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons((unsigned short)port);
  if (connect(fd, (struct sockaddr*)&a, sizeof a) != 0) return 2;
  static char burst[1 << 16];
  memset(burst, 'x', sizeof burst);
  for (int i = 0; i < 80; ++i) write_all(burst, sizeof burst, 0);
  for (int i = 0; i < 500; ++i) {
    int q = 0;
    ioctl(fd, SIOCOUTQ, &q);
    if (q == 0) break;
    sleep_ms(10);
  }
  int wrong_value = 0, wrong_errno = 0, wrong_after_bad = 0;
  int last = get(TCP_NODELAY);
  for (int r = 0; r < rounds; ++r) {
    const int want = (r / 2) % 2;  // 0 0 1 1 0 0 ...: every value set twice in a row
    int rc;
    if (r % 3 == 0) {
      int64_t wide = want;  // optlen 8: the kernel reads the first int
      rc = setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &wide, sizeof wide);
    } else {
      rc = setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &want, sizeof want);
    }
    if (rc != 0) wrong_errno++;
    last = want;
    // Failing calls: the kernel's answer, and nothing changes.
    const int before = get(TCP_NODELAY);
    const int other = !want;
    errno = 0;
    if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, (void*)16, sizeof(int)) != -1 || errno != EFAULT) wrong_errno++;
    errno = 0;
    if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &other, 2) != -1 || errno != EINVAL) wrong_errno++;
    errno = 0;
    if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, NULL, sizeof(int)) != -1 || errno != EFAULT) wrong_errno++;
    errno = 0;
    if (setsockopt(fd, IPPROTO_TCP, TCP_CORK, (void*)16, sizeof(int)) != -1 || errno != EFAULT) wrong_errno++;
    errno = 0;
    if (setsockopt(fd, IPPROTO_TCP, TCP_CORK, &other, 0) != -1 || errno != EINVAL) wrong_errno++;
    if (get(TCP_NODELAY) != before || get(TCP_CORK) != 0) wrong_after_bad++;
    sleep_ms(15);
    write_all("<HEAD", 5, MSG_MORE);
    write_all(">", 1, 0);
    if (get(TCP_NODELAY) != last) wrong_value++;
  }
  // A corked message whose cork is set and cleared by signal handlers.
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_cork;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGUSR1, &sa, NULL);
  sigaction(SIGUSR2, &sa, NULL);
  int zero = 0, one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_CORK, &one, sizeof one);  // the same, outside a handler
  const int plain_corked = get(TCP_CORK);
  setsockopt(fd, IPPROTO_TCP, TCP_CORK, &zero, sizeof zero);
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &zero, sizeof zero);
  sleep_ms(50);
  raise(SIGUSR1);
  const int corked = get(TCP_CORK);
  write_all("<SIG", 4, 0);
  sleep_ms(400);
  write_all("NAL>", 4, 0);
  raise(SIGUSR2);
  const int uncorked = get(TCP_CORK);
  sleep_ms(50);
  printf("{\"rounds\":%d,\"wrong_value\":%d,\"wrong_errno\":%d,\"wrong_after_bad\":%d,\"corked\":%d,\"uncorked\":%d,"
         "\"handler_errors\":%d,\"plain_corked\":%d}\n",
         rounds, wrong_value, wrong_errno, wrong_after_bad, corked, uncorked, (int)handler_errors, plain_corked);
  fflush(stdout);
  close(fd);
  return 0;
}
