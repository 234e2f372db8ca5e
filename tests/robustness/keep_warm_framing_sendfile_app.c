// A file sender that uses non-blocking sendfile() the way event-driven servers do: a call
// moves what fits in the socket buffer, the sender goes away (here: it waits for the peer to
// take everything queued, then stalls 400 ms), and later calls send the rest. A short
// sendfile() on a non-blocking socket means "the buffer is full", not "the file ran out".
//
//   keep_warm_framing_sendfile_app PORT FILE [sndtimeo]
// Connects to 127.0.0.1:PORT, sends a 5 MiB line of 'x' (blocking), waits until it is
// acknowledged, then sends FILE (one message) with non-blocking sendfile() as above, waits
// 100 ms and closes. Prints {"first":N,"size":S,"calls":C}: N is what the first call moved.
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/sockios.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static void die(const char* what) {
  perror(what);
  exit(2);
}

static void sleep_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

// Waits (at most 20 s) until nothing the app sent is unacknowledged: the peer took it all.
static void wait_until_acknowledged(int sock) {
  for (int i = 0; i < 20000; ++i) {
    int queued = 0;
    if (ioctl(sock, SIOCOUTQ, &queued) != 0) die("SIOCOUTQ");
    if (queued == 0) return;
    sleep_ms(1);
  }
  fprintf(stderr, "the peer did not take what was sent within 20 s\n");
  exit(2);
}

int main(int argc, char** argv) {
  if (argc != 3 && argc != 4) {
    fprintf(stderr, "usage: %s PORT FILE [sndtimeo]\n", argv[0]);
    return 2;
  }
  int sock = socket(AF_INET, SOCK_STREAM, 0);
  if (sock < 0) die("socket");
  // A send buffer smaller than the message, whatever the host's tcp_wmem: the first
  // sendfile() is cut short by it (the receiver's buffer is 1 MiB too).
  int sndbuf = 1 << 20;
  if (setsockopt(sock, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof sndbuf) != 0) die("SO_SNDBUF");
  struct sockaddr_in peer;
  memset(&peer, 0, sizeof peer);
  peer.sin_family = AF_INET;
  peer.sin_port = htons((unsigned short)atoi(argv[1]));
  peer.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(sock, (struct sockaddr*)&peer, sizeof peer) != 0) die("connect");

  // The burst opens the window (keep-warm sends nothing below 10 segments): one whole line.
  size_t burst_size = (size_t)5 << 20;
  char* burst = malloc(burst_size + 1);
  if (burst == NULL) die("malloc");
  memset(burst, 'x', burst_size);
  burst[burst_size] = '\n';
  for (size_t done = 0; done < burst_size + 1;) {
    ssize_t n = write(sock, burst + done, burst_size + 1 - done);
    if (n <= 0) die("write");
    done += (size_t)n;
  }
  free(burst);
  wait_until_acknowledged(sock);
  sleep_ms(50);

  int file = open(argv[2], O_RDONLY);
  if (file < 0) die(argv[2]);
  struct stat st;
  if (fstat(file, &st) != 0) die("fstat");
  size_t size = (size_t)st.st_size;
  if (argc == 4) {
    // "sndtimeo": a blocking socket with a send timeout, which cuts a call short as a full
    // buffer does a non-blocking one's.
    struct timeval timeout = {0, 100000};
    if (setsockopt(sock, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof timeout) != 0) die("SO_SNDTIMEO");
  } else if (fcntl(sock, F_SETFL, fcntl(sock, F_GETFL) | O_NONBLOCK) != 0) {
    die("O_NONBLOCK");
  }

  off_t offset = 0;
  ssize_t first = sendfile(sock, file, &offset, size);
  if (first < 0) die("sendfile");
  int calls = 1;
  // The stall: the sender is busy elsewhere while the peer drains the socket, and for 400 ms
  // after; the connection is idle in the middle of the message.
  wait_until_acknowledged(sock);
  sleep_ms(400);
  while ((size_t)offset < size) {
    struct pollfd p = {sock, POLLOUT, 0};
    if (poll(&p, 1, 20000) != 1) die("poll");
    ssize_t n = sendfile(sock, file, &offset, size - (size_t)offset);
    ++calls;
    if (n < 0 && errno != EAGAIN) die("sendfile");
  }
  wait_until_acknowledged(sock);
  sleep_ms(100);
  close(sock);
  printf("{\"first\":%zd,\"size\":%zu,\"calls\":%d}\n", first, size, calls);
  return 0;
}
