// nodelay = "on-wait" (the built-in default) must leave the app's own view of TCP_NODELAY alone.
//   dup:   the app sets TCP_NODELAY=1 through one descriptor and writes through a dup of it, then
//          waits: the socket must keep TCP_NODELAY=1 (the push's "set and clear" must not clear it).
//   fork:  a child sets TCP_NODELAY=1 on the socket it shares with its parent; the parent writes
//          and waits: the socket must keep TCP_NODELAY=1.
//   watch: the app never sets TCP_NODELAY; one thread writes two small messages and waits for a
//          reply, another reads TCP_NODELAY: it must always read 0.
// Exit 0 when the view held, 1 when it did not.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int client;
static atomic_int done;
static long seen_on;
static long looks;

static int nodelay_of(int fd) {
  int value = -1;
  socklen_t len = sizeof value;
  getsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &value, &len);
  return value;
}

static int connected_pair(int* server) {
  const int listener = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in address = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t len = sizeof address;
  if (bind(listener, (struct sockaddr*)&address, sizeof address) != 0 || listen(listener, 1) != 0 ||
      getsockname(listener, (struct sockaddr*)&address, &len) != 0) {
    return -1;
  }
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (connect(fd, (struct sockaddr*)&address, sizeof address) != 0) {
    return -1;
  }
  *server = accept(listener, NULL, NULL);
  close(listener);
  return fd;
}

// Fills the send buffer through `fd` (the peer does not read), so bytes stay unsent, then waits.
static void write_until_full_then_wait(int fd) {
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  char chunk[1000];
  memset(chunk, 'x', sizeof chunk);
  while (write(fd, chunk, sizeof chunk) > 0) {
  }
  struct pollfd wait_for = {.fd = fd, .events = POLLIN};
  poll(&wait_for, 1, 10);
}

static int dup_case(void) {
  int server = -1;
  const int fd = connected_pair(&server);
  const int copy = dup(fd);
  const int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  write_until_full_then_wait(copy);
  const int after = nodelay_of(fd);
  printf("dup: TCP_NODELAY after the wait = %d (the app set 1)\n", after);
  return after == 1 ? 0 : 1;
}

static int fork_case(void) {
  int server = -1;
  const int fd = connected_pair(&server);
  const pid_t child = fork();
  if (child == 0) {
    const int one = 1;
    _exit(setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) == 0 ? 0 : 1);
  }
  waitpid(child, NULL, 0);
  write_until_full_then_wait(fd);
  const int after = nodelay_of(fd);
  printf("fork: TCP_NODELAY after the wait = %d (the child set 1)\n", after);
  return after == 1 ? 0 : 1;
}

static void* echo_four(void* arg) {
  const int fd = *(int*)arg;
  char buffer[64];
  for (;;) {
    int got = 0;
    while (got < 4) {
      const ssize_t n = read(fd, buffer, sizeof buffer);
      if (n <= 0) {
        return NULL;
      }
      got += (int)n;
    }
    write(fd, buffer, 4);
  }
}

static void* watch(void* arg) {
  (void)arg;
  while (!done) {
    looks++;
    if (nodelay_of(client) != 0) {
      seen_on++;
    }
  }
  return NULL;
}

static int watch_case(void) {
  int server = -1;
  client = connected_pair(&server);
  pthread_t echo_thread;
  pthread_t watch_thread;
  pthread_create(&echo_thread, NULL, echo_four, &server);
  pthread_create(&watch_thread, NULL, watch, NULL);
  struct timespec start;
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &start);
  char reply[8];
  for (int i = 0; i < 20000; i++) {
    write(client, "ab", 2);
    write(client, "cd", 2);
    int got = 0;
    while (got < 4) {
      got += (int)read(client, reply, sizeof reply);
    }
    clock_gettime(CLOCK_MONOTONIC, &now);
    if (now.tv_sec - start.tv_sec > 5) {  // Nagle's stalls without the shim: bounded
      break;
    }
  }
  done = 1;
  pthread_join(watch_thread, NULL);
  printf("watch: TCP_NODELAY read 1 in %ld of %ld looks (the app never set it)\n", seen_on, looks);
  return seen_on == 0 ? 0 : 1;
}

int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "";
  if (strcmp(mode, "dup") == 0) {
    return dup_case();
  }
  if (strcmp(mode, "fork") == 0) {
    return fork_case();
  }
  if (strcmp(mode, "watch") == 0) {
    return watch_case();
  }
  fprintf(stderr, "usage: on_wait_app_view dup|fork|watch\n");
  return 2;
}
