// Many loopback connections opened and closed from several threads (two thirds of them write,
// so their closes take a write-latency histogram), from a SIGALRM handler, from a forked child
// that goes on, and from a program the child execs. The server (a thread of the parent) checks
// every byte; close_storm.py checks the log.
// usage: close_storm THREADS PER_THREAD           (parent)
//        close_storm --client PORT COUNT TAG       (after an exec)
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

static int g_port;
static atomic_long g_sent_bytes, g_connections, g_handler_connections, g_failures;

static int dial(void) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((uint16_t)g_port)};
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, (struct sockaddr*)&addr, sizeof addr) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// One connection: writes `writes` messages of a known pattern (4-byte length, then bytes), closes.
static int one_connection(int writes, unsigned seed) {
  int fd = dial();
  if (fd < 0) return -1;
  long total = 0;
  for (int w = 0; w < writes; ++w) {
    unsigned char buf[600];
    uint32_t len = 16 + (seed * 31 + w * 7) % 500;
    memcpy(buf, &len, 4);
    for (uint32_t i = 4; i < len; ++i) buf[i] = (unsigned char)(i ^ len);
    if (write(fd, buf, len) != (ssize_t)len) {
      close(fd);
      return -1;
    }
    total += len;
  }
  atomic_fetch_add(&g_sent_bytes, total);
  atomic_fetch_add(&g_connections, 1);
  close(fd);
  return 0;
}

static void on_alarm(int sig) {
  (void)sig;
  int saved = errno;
  int fd = dial();
  if (fd >= 0) {
    unsigned char buf[16];
    uint32_t len = 16;
    memcpy(buf, &len, 4);
    for (uint32_t i = 4; i < len; ++i) buf[i] = (unsigned char)(i ^ len);
    if (write(fd, buf, len) == (ssize_t)len) {
      atomic_fetch_add(&g_sent_bytes, 16);
      atomic_fetch_add(&g_handler_connections, 1);
    }
    close(fd);
  }
  errno = saved;
}

// Server: reads every connection to EOF, checking each message's pattern.
struct peer {
  unsigned char buf[1024];
  size_t have;
};
static atomic_long g_received_bytes, g_accepted, g_corrupt;
static atomic_int g_server_stop;

static void* serve(void* arg) {
  int listener = *(int*)arg;
  // The handler's connect would wait for this very thread to accept it.
  sigset_t alarm;
  sigemptyset(&alarm);
  sigaddset(&alarm, SIGALRM);
  pthread_sigmask(SIG_BLOCK, &alarm, NULL);
  int ep = epoll_create1(0);
  struct epoll_event ev = {.events = EPOLLIN, .data.ptr = NULL};
  epoll_ctl(ep, EPOLL_CTL_ADD, listener, &ev);
  while (!atomic_load(&g_server_stop)) {
    struct epoll_event events[64];
    int n = epoll_wait(ep, events, 64, 50);
    for (int i = 0; i < n; ++i) {
      if (events[i].data.ptr == NULL) {
        int fd;
        while ((fd = accept4(listener, NULL, NULL, SOCK_NONBLOCK)) >= 0) {
          struct peer* p = calloc(1, sizeof *p);
          p->have = 0;
          struct epoll_event pev = {.events = EPOLLIN, .data.ptr = p};
          // fd kept beside: store in the first bytes after the buffer via a parallel field
          epoll_ctl(ep, EPOLL_CTL_ADD, fd, &pev);
          *(int*)&p->buf[sizeof p->buf - sizeof(int)] = fd;
          atomic_fetch_add(&g_accepted, 1);
        }
        continue;
      }
      struct peer* p = events[i].data.ptr;
      int fd = *(int*)&p->buf[sizeof p->buf - sizeof(int)];
      for (;;) {
        ssize_t r = read(fd, p->buf + p->have, 600 - p->have);
        if (r > 0) {
          atomic_fetch_add(&g_received_bytes, r);
          p->have += (size_t)r;
          while (p->have >= 4) {
            uint32_t len;
            memcpy(&len, p->buf, 4);
            if (len < 16 || len > 600) {
              atomic_fetch_add(&g_corrupt, 1);
              p->have = 0;
              break;
            }
            if (p->have < len) break;
            for (uint32_t k = 4; k < len; ++k)
              if (p->buf[k] != (unsigned char)(k ^ len)) {
                atomic_fetch_add(&g_corrupt, 1);
                break;
              }
            memmove(p->buf, p->buf + len, p->have - len);
            p->have -= len;
          }
          continue;
        }
        if (r == 0 || (errno != EAGAIN && errno != EINTR)) {
          if (p->have != 0) atomic_fetch_add(&g_corrupt, 1);
          epoll_ctl(ep, EPOLL_CTL_DEL, fd, NULL);
          close(fd);
          free(p);
        }
        break;
      }
    }
  }
  close(ep);
  return NULL;
}

struct client_args {
  int index, count;
};

static void run_clients(int count, int tag) {
  for (int i = 0; i < count; ++i) {
    // A third write nothing, a third once, a third several times.
    if (one_connection(i % 3 == 0 ? 0 : (i % 3 == 1 ? 1 : 5), (unsigned)(tag * 100000 + i)) != 0)
      atomic_fetch_add(&g_failures, 1);
  }
}

static char g_self[4096];

static void* client(void* arg) {
  struct client_args* a = arg;
  run_clients(a->count / 2, a->index);
  if (a->index == 0 || a->index == 1) {
    pid_t child = fork();
    if (child == 0) {
      // The child goes on (one thread), then thread 1's child execs a fresh client.
      atomic_store(&g_connections, 0);
      atomic_store(&g_failures, 0);
      run_clients(a->count / 4, 1000 + a->index);
      if (a->index == 1) {
        char port[16], count[16], tag[16];
        snprintf(port, sizeof port, "%d", g_port);
        snprintf(count, sizeof count, "%d", a->count / 4);
        snprintf(tag, sizeof tag, "%d", 2000 + a->index);
        printf("child %d (exec next): %ld connections, %ld failures\n", getpid(), atomic_load(&g_connections),
               atomic_load(&g_failures));
        fflush(stdout);
        execl(g_self, g_self, "--client", port, count, tag, (char*)NULL);
        _exit(99);
      }
      printf("child %d: %ld connections, %ld failures\n", getpid(), atomic_load(&g_connections),
             atomic_load(&g_failures));
      exit(atomic_load(&g_failures) == 0 ? 0 : 1);
    }
    int status = 0;
    run_clients(a->count / 2, a->index + 500);
    waitpid(child, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) atomic_fetch_add(&g_failures, 1000000);
    return NULL;
  }
  run_clients(a->count - a->count / 2, a->index + 500);
  return NULL;
}

int main(int argc, char** argv) {
  if (readlink("/proc/self/exe", g_self, sizeof g_self - 1) < 0) return 2;
  if (argc == 5 && strcmp(argv[1], "--client") == 0) {
    g_port = atoi(argv[2]);
    run_clients(atoi(argv[3]), atoi(argv[4]));
    printf("exec'd %d: %ld connections, %ld failures\n", getpid(), atomic_load(&g_connections),
           atomic_load(&g_failures));
    return atomic_load(&g_failures) == 0 ? 0 : 1;
  }
  int threads = argc > 1 ? atoi(argv[1]) : 6;
  int per_thread = argc > 2 ? atoi(argv[2]) : 600;
  int listener = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
  struct sockaddr_in addr = {.sin_family = AF_INET};
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  if (bind(listener, (struct sockaddr*)&addr, sizeof addr) != 0 || listen(listener, 4096) != 0) return 2;
  getsockname(listener, (struct sockaddr*)&addr, &len);
  g_port = ntohs(addr.sin_port);
  pthread_t server;
  pthread_create(&server, NULL, serve, &listener);

  struct sigaction sa = {.sa_handler = on_alarm, .sa_flags = SA_RESTART};
  sigemptyset(&sa.sa_mask);
  sigaction(SIGALRM, &sa, NULL);
  struct itimerval timer = {.it_interval = {0, 2000}, .it_value = {0, 2000}};
  setitimer(ITIMER_REAL, &timer, NULL);

  pthread_t* tids = calloc((size_t)threads, sizeof *tids);
  struct client_args* args = calloc((size_t)threads, sizeof *args);
  for (int i = 0; i < threads; ++i) {
    args[i] = (struct client_args){i, per_thread};
    pthread_create(&tids[i], NULL, client, &args[i]);
  }
  for (int i = 0; i < threads; ++i) pthread_join(tids[i], NULL);
  struct itimerval off = {0};
  setitimer(ITIMER_REAL, &off, NULL);
  // Let the server read what is left.
  for (int i = 0; i < 100 && atomic_load(&g_received_bytes) < atomic_load(&g_sent_bytes); ++i) usleep(10000);
  usleep(100000);
  atomic_store(&g_server_stop, 1);
  pthread_join(server, NULL);
  printf(
      "parent %d: %ld connections + %ld from the handler, %ld failures, accepted %ld (children's included), "
      "corrupt %ld\n",
      getpid(), atomic_load(&g_connections), atomic_load(&g_handler_connections), atomic_load(&g_failures),
      atomic_load(&g_accepted), atomic_load(&g_corrupt));
  return atomic_load(&g_failures) == 0 && atomic_load(&g_corrupt) == 0 ? 0 : 1;
}
