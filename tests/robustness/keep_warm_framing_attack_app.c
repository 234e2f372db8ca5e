// Sends one protocol's messages in awkward ways, pausing inside them, for
// keep_warm_framing_attack.py. Every pause waits until the peer has acknowledged all that was
// sent and then 150 ms: far longer than the rule's 10 ms heartbeat interval, so a heartbeat the
// shim wrongly believes to be between two messages goes out there.
//
//   keep_warm_framing_attack_app CASE PORT EXPECTED
// Connects to 127.0.0.1:PORT (CASE "adopted_lines": with raw system calls), sends a 5 MiB
// message that opens the window, then CASE's messages. EXPECTED receives the bytes meant to
// arrive, each message on its own: "<length>\n<bytes>" per message, so the harness knows
// where heartbeats may go. Exits 0, or 2 on a failure it prints.
#define _GNU_SOURCE
#include <aio.h>
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/sockios.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/time.h>
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int sock = -1;
static FILE* expected;
static char* pending;  // the message being built in EXPECTED
static size_t pending_size;
static const char* work_dir = "/tmp";

static void die(const char* what) {
  fprintf(stderr, "%s: %s\n", what, strerror(errno));
  exit(2);
}

static void sleep_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

// Until the peer took everything, then a pause much longer than the heartbeat interval.
static void pause_idle(void) {
  for (int i = 0; i < 20000; ++i) {
    int queued = 0;
    if (ioctl(sock, SIOCOUTQ, &queued) != 0) die("SIOCOUTQ");
    if (queued == 0) {
      sleep_ms(150);
      return;
    }
    sleep_ms(1);
  }
  fprintf(stderr, "the peer did not take what was sent within 20 s\n");
  exit(2);
}

// The expected stream: bytes of the current message, and its end.
static void expect(const void* data, size_t size) {
  pending = realloc(pending, pending_size + size);
  memcpy(pending + pending_size, data, size);
  pending_size += size;
}
static void end_message(void) {
  fprintf(expected, "%zu\n", pending_size);
  fwrite(pending, 1, pending_size, expected);
  pending_size = 0;
}

static void send_all(const void* data, size_t size) {
  const char* p = data;
  expect(data, size);
  while (size > 0) {
    ssize_t n = write(sock, p, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      die("write");
    }
    p += n;
    size -= (size_t)n;
  }
}
static void send_str(const char* s) { send_all(s, strlen(s)); }

// A message sent in pieces at `cuts` (offsets, ascending), pausing at each cut.
static void send_cut(const char* message, size_t size, const size_t* cuts, int count) {
  size_t at = 0;
  for (int i = 0; i < count; ++i) {
    send_all(message + at, cuts[i] - at);
    pause_idle();
    at = cuts[i];
  }
  send_all(message + at, size - at);
  end_message();
}
// Cut at every '|', which is removed from the message (of `size` bytes, NULs allowed).
static void send_marked_n(const char* marked, size_t marked_size) {
  size_t cuts[64];
  int count = 0;
  char* message = malloc(marked_size + 1);
  size_t size = 0;
  for (size_t i = 0; i < marked_size; ++i) {
    if (marked[i] == '|') {
      cuts[count++] = size;
    } else {
      message[size++] = marked[i];
    }
  }
  send_cut(message, size, cuts, count);
  free(message);
}
static void send_marked(const char* marked) { send_marked_n(marked, strlen(marked)); }
#define SEND_MARKED_LITERAL(literal) send_marked_n(literal, sizeof literal - 1)

static char* filled(size_t size, char byte) {
  char* data = malloc(size);
  memset(data, byte, size);
  return data;
}

static const size_t kBurst = 5u << 20;

static void burst_lines(void) {
  char* data = filled(kBurst, 'x');
  data[kBurst - 1] = '\n';
  send_all(data, kBurst);
  end_message();
  free(data);
}

static void burst_http(void) {
  char head[128];
  snprintf(head, sizeof head, "POST /burst HTTP/1.1\r\nHost: a\r\nContent-Length: %zu\r\n\r\n", kBurst);
  send_str(head);
  char* data = filled(kBurst, 'x');
  send_all(data, kBurst);
  end_message();
  free(data);
}

static void burst_resp(void) {
  char head[128];
  snprintf(head, sizeof head, "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$%zu\r\n", kBurst);
  send_str(head);
  char* data = filled(kBurst, 'x');
  send_all(data, kBurst);
  send_str("\r\n");
  end_message();
  free(data);
}

static void burst_stomp(void) {
  send_str("SEND\ndestination:/queue/a\n\n");
  char* data = filled(kBurst, 'x');
  send_all(data, kBurst);
  send_all("", 1);
  end_message();
  free(data);
}

static void connect_to(int port, int raw) {
  struct sockaddr_in peer = {.sin_family = AF_INET, .sin_port = htons((unsigned short)port)};
  peer.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (raw) {
    sock = (int)syscall(SYS_socket, AF_INET, SOCK_STREAM, 0);
    if (sock < 0 || syscall(SYS_connect, sock, &peer, sizeof peer) != 0) die("raw connect");
  } else {
    sock = socket(AF_INET, SOCK_STREAM, 0);
    if (sock < 0 || connect(sock, (struct sockaddr*)&peer, sizeof peer) != 0) die("connect");
  }
}

// ---- lines: bytes written by libc calls other than the write family ----

static void case_dprintf_lines(void) {
  burst_lines();
  expect("partial ", 8);
  if (dprintf(sock, "partial ") != 8) die("dprintf");
  pause_idle();
  expect("rest\n", 5);
  if (dprintf(sock, "rest\n") != 5) die("dprintf");
  end_message();
}

static void case_pwritev2_lines(void) {
  burst_lines();
  struct iovec part = {"partial ", 8};
  expect("partial ", 8);
  if (pwritev2(sock, &part, 1, -1, 0) != 8) die("pwritev2");
  pause_idle();
  send_str("rest\n");
  end_message();
}

// A line written by a child that system() or popen() started with the socket inherited (glibc
// starts it with its internal posix_spawn, past the hook of that name), pausing in the middle.
static void child_writes_line(int use_popen) {
  burst_lines();
  pause_idle();
  char command[256];
  snprintf(command, sizeof command, "printf 'partial ' >&%d; sleep 0.3; printf 'rest\\n' >&%d", sock, sock);
  expect("partial rest\n", 13);
  if (use_popen) {
    FILE* child = popen(command, "r");
    if (child == NULL || pclose(child) != 0) die("popen");
  } else if (system(command) != 0) {
    die("system");
  }
  end_message();
}
static void case_system_lines(void) { child_writes_line(0); }
// vfork() and _Fork() run no fork handlers either.
static void child_runs_shell(int use_fork_without_handlers) {
  burst_lines();
  pause_idle();
  char command[256];
  snprintf(command, sizeof command, "printf 'partial ' >&%d; sleep 0.3; printf 'rest\\n' >&%d", sock, sock);
  expect("partial rest\n", 13);
  pid_t child = use_fork_without_handlers ? _Fork() : vfork();
  if (child == 0) {
    execl("/bin/sh", "sh", "-c", command, (char*)NULL);
    _exit(127);
  }
  int status = 0;
  if (child < 0 || waitpid(child, &status, 0) != child || status != 0) die("vfork");
  end_message();
}
static void case_vfork_lines(void) { child_runs_shell(0); }
static void case_fork_without_handlers_lines(void) { child_runs_shell(1); }
static void case_popen_lines(void) { child_writes_line(1); }

// Two threads and a signal handler write whole lines at once, without a lock, some pausing
// between lines; stdout gets the number of lines written. Each line says its own length.
static volatile sig_atomic_t handler_lines;
static void write_line(char tag, int id, int seq, size_t size) {
  char line[8192];
  int n = snprintf(line, sizeof line, "%c%d-%d-%zu-", tag, id, seq, size);
  memset(line + n, 'a', size - (size_t)n - 1);
  line[size - 1] = '\n';
  for (size_t at = 0; at < size;) {
    ssize_t w = write(sock, line + at, size - at);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) die("write");
    at += (size_t)w;
  }
}
static void on_alarm(int signal_number) {
  (void)signal_number;
  const int saved = errno;
  write_line('S', 0, handler_lines, 64);
  ++handler_lines;
  errno = saved;
}
static void* writer(void* arg) {
  const int id = (int)(long)arg;
  for (int seq = 0; seq < 400; ++seq) {
    write_line('T', id, seq, 40 + (size_t)((seq * 37 + id * 11) % 4000));
    if (seq % 50 == 0) sleep_ms(30);
  }
  return NULL;
}
static void case_threads_lines(void) {
  burst_lines();
  struct sigaction action = {.sa_handler = on_alarm, .sa_flags = SA_RESTART};
  sigaction(SIGALRM, &action, NULL);
  struct itimerval timer = {{0, 7000}, {0, 7000}};
  setitimer(ITIMER_REAL, &timer, NULL);
  pthread_t threads[2];
  for (long i = 0; i < 2; ++i) pthread_create(&threads[i], NULL, writer, (void*)i);
  for (int i = 0; i < 2; ++i) pthread_join(threads[i], NULL);
  struct itimerval off = {{0, 0}, {0, 0}};
  setitimer(ITIMER_REAL, &off, NULL);
  printf("%d\n", 800 + handler_lines);
}

// POSIX AIO: glibc's helper thread falls back from pwrite (ESPIPE on a socket) to its own
// internal write.
static void aio_write_all(const char* text) {
  struct aiocb request = {.aio_fildes = sock, .aio_buf = (void*)text, .aio_nbytes = strlen(text)};
  expect(text, strlen(text));
  if (aio_write(&request) != 0) die("aio_write");
  const struct aiocb* list[1] = {&request};
  while (aio_error(&request) == EINPROGRESS) aio_suspend(list, 1, NULL);
  if (aio_return(&request) != (ssize_t)strlen(text)) die("aio_return");
}
static void case_aio_lines(void) {
  burst_lines();
  aio_write_all("partial ");
  pause_idle();
  aio_write_all("rest\n");
  end_message();
}

// Connected by raw system calls, so the shim adopts it at the app's first setsockopt, in the
// middle of a line written (raw) before.
static void case_adopted_lines(void) {
  char* data = filled(kBurst, 'x');
  data[kBurst - 1] = '\n';
  expect(data, kBurst);
  for (size_t at = 0; at < kBurst;) {
    long n = syscall(SYS_write, sock, data + at, kBurst - at);
    if (n <= 0) die("raw write");
    at += (size_t)n;
  }
  end_message();
  free(data);
  expect("partial ", 8);
  if (syscall(SYS_write, sock, "partial ", 8) != 8) die("raw write");
  int one = 1;
  if (setsockopt(sock, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one) != 0) die("SO_KEEPALIVE");
  pause_idle();
  send_str("rest\n");
  end_message();
}

// ---- http1-client ----

// obs-fold (RFC 9112 5.2): a server may replace it with a space and take the field.
static void case_http_obsfold_length(void) {
  burst_http();
  send_marked("POST /a HTTP/1.1\r\nHost: a\r\nContent-Length:\r\n 5\r\n\r\n|hel|lo");
}

static void case_http_obsfold_chunked(void) {
  burst_http();
  send_marked("POST /a HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip,\r\n chunked\r\n\r\n|5\r\nhello\r\n|0\r\n\r\n");
}

// Transfer-Encoding as a list with an empty element (RFC 9110 5.6.1: a recipient ignores
// it), which haproxy takes as chunked and forwards as it is.
static void case_http_te_trailing_comma(void) {
  burst_http();
  send_marked("POST /a HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked,\r\n\r\n|5\r\nhel|lo\r\n0\r\n\r\n");
}
static void case_http_te_empty_field(void) {
  burst_http();
  send_marked("POST /a HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding:\r\n\r\n|5\r\nhel|lo\r\n0\r\n\r\n");
}

// Cases the framing must follow: each message paused inside at every '|'.
static void case_http_edges(void) {
  burst_http();
  // pipelined: two requests in one write, the second cut
  send_marked("GET /1 HTTP/1.1\r\nHost: a\r\n\r\nGET /2 HTTP/1.1\r|\nHost: a\r\n|\r\n");
  // chunked with extensions and trailers
  send_marked("POST /c HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n|5;name=\"v;x\"\r\nhel|lo\r\n|"
              "A ; ext\r\n0123456789\r|\n0;last\r\nTrailer-One: x|\r\nTrailer-Two: y\r\n|\r\n");
  // Content-Length with odd whitespace and case; a GET and a HEAD with bodies
  send_marked("POST /w HTTP/1.1\r\nHost: a\r\ncOnTeNt-LeNgTh: \t 7 \t\r\n|\r\nabc|defg");
  send_marked("GET /g HTTP/1.1\r\nHost: a\r\nContent-Length: 4\r\n\r\nab|cd");
  send_marked("HEAD /h HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\n|a|bc");
  // Expect: 100-continue: the client waits for 100 between head and body
  send_marked("PUT /e HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nContent-Length: 6\r\n\r\n|abcdef");
  // LF-only lines
  send_marked("POST /l HTTP/1.1\nHost: a\nContent-Length: 2\n|\nab");
  // a very long header, cut inside it, then a chunked body whose coding is spelled oddly
  {
    size_t size = 70000;
    char* message = malloc(size + 256);
    int n = sprintf(message, "POST /long HTTP/1.1\r\nHost: a\r\nX-Long: ");
    memset(message + n, 'v', 60000);
    n += 60000;
    n += sprintf(message + n, "\r\nTransfer-Encoding: ChUnKeD\r\n\r\n3\r\nabc\r\n0\r\n\r\n");
    size_t cuts[] = {30000, (size_t)n - 12};
    send_cut(message, (size_t)n, cuts, 2);
    free(message);
  }
  // a body that is itself a request, and one whose bytes are all CRLF
  send_marked("POST /r HTTP/1.1\r\nHost: a\r\nContent-Length: 18\r\n\r\nGET / HTTP/1.1\r\n|\r\n");
  send_marked("POST /n HTTP/1.1\r\nHost: a\r\nContent-Length: 4\r\n\r\n\r\n|\r\n");
}

// splice() from a pipe: inside a declared body it is counted; a head spliced is bytes the
// framing cannot see, so keep-warm ends there (the harness checks the reason). A negative
// count to sendfile() is the kernel's to refuse or clamp, as without the shim.
static void splice_all(const char* text, int more) {
  int pipe_fds[2];
  size_t size = strlen(text);
  if (pipe(pipe_fds) != 0 || write(pipe_fds[1], text, size) != (ssize_t)size) die("pipe");
  expect(text, size);
  for (size_t at = 0; at < size;) {
    ssize_t n = splice(pipe_fds[0], NULL, sock, NULL, size - at, more ? SPLICE_F_MORE : 0);
    if (n <= 0) die("splice");
    at += (size_t)n;
  }
  close(pipe_fds[0]);
  close(pipe_fds[1]);
}
static void case_http_splice(void) {
  burst_http();
  send_str("POST /s HTTP/1.1\r\nHost: a\r\nContent-Length: 10\r\n\r\n");
  splice_all("01234", 1);
  pause_idle();
  splice_all("56789", 0);
  end_message();
  pause_idle();
  char path[256];
  snprintf(path, sizeof path, "%s/body.txt", work_dir);
  const char request[] = "GET /f HTTP/1.1\r\nHost: a\r\n\r\n";
  const size_t size = sizeof request - 1;
  int file = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
  if (file < 0 || write(file, request, size) != (ssize_t)size) die("file");
  off_t offset = 0;
  errno = 0;
  ssize_t sent = sendfile(sock, file, &offset, (size_t)-1);  // EINVAL on Linux, with or without the shim
  if (sent != -1 || errno != EINVAL || offset != 0) {
    fprintf(stderr, "sendfile with a count of -1: %zd (errno %d), offset %ld\n", sent, errno, (long)offset);
    exit(3);
  }
  expect(request, size);
  if (sendfile(sock, file, &offset, 1 << 30) != (ssize_t)size) die("sendfile past the end");
  end_message();
  close(file);
  splice_all("GET /spliced HTTP/1.1\r\n", 0);
  pause_idle();
  send_str("Host: a\r\n\r\n");
  end_message();
}

// ---- redis-client ----

static void case_resp_edges(void) {
  burst_resp();
  send_marked("SET k \"a b\\\"c\" |'x y'\r\n");
  send_marked("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$4\r\n\r\n\r|\n\r\n*1\r\n$4\r|\nPING\r\n");
  send_marked("*2\r\n$4\r\nECHO\r\n$-|1\r\n");
  send_marked("*2\r\n$4\r\nECHO\r\n$0\r\n\r|\n");
  // a bulk string that looks like a command, cut after its declared length's digits
  send_marked("*2\r\n$4\r\nECHO\r\n$1|2\r\n*1\r\n$4\r\nPING|\r\n");
}

// ---- stomp ----

static void case_stomp_edges(void) {
  burst_stomp();
  // content-length with NULs inside the body; CRLF lines; a frame without content-length
  SEND_MARKED_LITERAL("SEND\r\ndestination:/q\r\ncontent-length:5\r\n\r\na\0b|\0c\0");
  SEND_MARKED_LITERAL("SEND\ndestination:/q\n|\nbody with\nnewlines|\n\n\0");
  // a repeated content-length: the first counts
  const char repeated[] = "SEND\ndestination:/q\ncontent-length:3\ncontent-length:9\n\nx\0y\0";
  send_all(repeated, sizeof repeated - 1);
  end_message();
}

// ---- write-call shapes under lines ----

static void case_shapes_lines(void) {
  burst_lines();
  // writev of many iovecs, the last ones empty: the line ends in the middle of the array
  struct iovec iov[600];
  char text[600];
  for (int i = 0; i < 600; ++i) {
    text[i] = (char)('a' + i % 26);
    iov[i].iov_base = &text[i];
    iov[i].iov_len = i < 500 ? 1 : 0;
  }
  text[499] = 'z';
  expect(text, 500);
  if (writev(sock, iov, 600) != 500) die("writev");
  pause_idle();
  send_str("\n");
  end_message();
  // sendmsg with MSG_MORE, then the end of the line by sendmmsg
  struct iovec part = {"more ", 5};
  struct msghdr header = {.msg_iov = &part, .msg_iovlen = 1};
  expect("more ", 5);
  if (sendmsg(sock, &header, MSG_MORE) != 5) die("sendmsg");
  pause_idle();
  struct iovec tail[2] = {{"mm", 2}, {"sg\n", 3}};
  struct mmsghdr messages[1] = {{.msg_hdr = {.msg_iov = tail, .msg_iovlen = 2}}};
  expect("mmsg\n", 5);
  if (sendmmsg(sock, messages, 1, 0) != 1) die("sendmmsg");
  end_message();
  // sendfile with and without an offset, the file's line cut in two
  char path[256];
  snprintf(path, sizeof path, "%s/line.txt", work_dir);
  int file = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
  if (file < 0 || write(file, "from a file\n", 12) != 12) die("file");
  off_t offset = 0;
  expect("from a file\n", 12);
  if (sendfile(sock, file, &offset, 5) != 5) die("sendfile");
  pause_idle();
  if (lseek(file, 5, SEEK_SET) != 5 || sendfile(sock, file, NULL, 7) != 7) die("sendfile");
  end_message();
  close(file);
  // bad pointers: EFAULT unchanged, nothing sent
  struct iovec bad[2] = {{"ok", 0}, {(void*)16, 4}};
  errno = 0;
  if (writev(sock, bad, 2) != -1 || errno != EFAULT) {
    fprintf(stderr, "writev with a bad iov_base: errno %d\n", errno);
    exit(3);
  }
  errno = 0;
  struct iovec* volatile bad_array = (struct iovec*)16;
  if (writev(sock, bad_array, 2) != -1 || errno != EFAULT) {
    fprintf(stderr, "writev with a bad iov: errno %d\n", errno);
    exit(3);
  }
  errno = 0;
  struct msghdr bad_header = {.msg_iov = bad_array, .msg_iovlen = 1};
  if (sendmsg(sock, &bad_header, 0) != -1 || errno != EFAULT) {
    fprintf(stderr, "sendmsg with a bad iov: errno %d\n", errno);
    exit(3);
  }
  errno = 0;
  int again = open(path, O_RDONLY);
  if (sendfile(sock, again, (off_t*)16, 4) != -1 || errno != EFAULT) {
    fprintf(stderr, "sendfile with a bad offset: errno %d\n", errno);
    exit(3);
  }
  close(again);
  send_str("after bad pointers\n");
  end_message();
}

int main(int argc, char** argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: %s CASE PORT EXPECTED\n", argv[0]);
    return 2;
  }
  const char* name = argv[1];
  expected = fopen(argv[3], "wb");
  if (expected == NULL) die("EXPECTED");
  char* dir = strdup(argv[3]);
  if (strrchr(dir, '/') != NULL) {
    *strrchr(dir, '/') = '\0';
    work_dir = dir;
  }
  connect_to(atoi(argv[2]), strcmp(name, "adopted_lines") == 0);
  struct {
    const char* name;
    void (*run)(void);
  } cases[] = {
      {"dprintf_lines", case_dprintf_lines},
      {"pwritev2_lines", case_pwritev2_lines},
      {"aio_lines", case_aio_lines},
      {"adopted_lines", case_adopted_lines},
      {"system_lines", case_system_lines},
      {"popen_lines", case_popen_lines},
      {"vfork_lines", case_vfork_lines},
      {"threads_lines", case_threads_lines},
      {"fork_without_handlers_lines", case_fork_without_handlers_lines},
      {"http_obsfold_length", case_http_obsfold_length},
      {"http_obsfold_chunked", case_http_obsfold_chunked},
      {"http_te_trailing_comma", case_http_te_trailing_comma},
      {"http_te_empty_field", case_http_te_empty_field},
      {"http_edges", case_http_edges},
      {"http_splice", case_http_splice},
      {"resp_edges", case_resp_edges},
      {"stomp_edges", case_stomp_edges},
      {"shapes_lines", case_shapes_lines},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
    if (strcmp(cases[i].name, name) == 0) {
      cases[i].run();
      pause_idle();  // between messages: heartbeats are welcome here
      fclose(expected);
      close(sock);
      return 0;
    }
  }
  fprintf(stderr, "unknown case %s\n", name);
  return 2;
}
