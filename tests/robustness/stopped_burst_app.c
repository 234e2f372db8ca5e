/* stopped_burst_app THREADS PAIRS BYTES AFTER: THREADS threads each open PAIRS loopback
 * connection pairs and write BYTES on each client; then the process prints "READY <pid>", waits
 * 0.3 s (the harness stops it during the burst that follows) and every thread closes its sockets
 * at once, then opens and closes AFTER more pairs one by one (their descriptors are those just
 * closed, whose conn_close records may still wait in a full ring). Prints "done" at the end. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

static int threads, pairs, bytes_each, after, listener;
static struct sockaddr_in address;
static pthread_barrier_t ready, go;
static pthread_mutex_t accepting = PTHREAD_MUTEX_INITIALIZER;

static void open_pair(int* client, int* server) {
  *client = socket(AF_INET, SOCK_STREAM, 0);
  if (*client < 0 || connect(*client, (const struct sockaddr*)&address, sizeof address) != 0) {
    exit(2);
  }
  pthread_mutex_lock(&accepting);
  *server = accept(listener, NULL, NULL);
  pthread_mutex_unlock(&accepting);
  if (*server < 0) {
    exit(2);
  }
}

static void* open_then_close(void* unused) {
  (void)unused;
  int* fds = malloc(sizeof(int) * 2 * (size_t)pairs);
  static char data[65536];
  int count = 0;
  for (int i = 0; i < pairs; ++i) {
    int client, server;
    open_pair(&client, &server);
    for (int left = bytes_each; left > 0;) {
      const ssize_t written = write(client, data, left < (int)sizeof data ? (size_t)left : sizeof data);
      if (written <= 0) {
        exit(3);
      }
      left -= (int)written;
    }
    fds[count++] = client;
    fds[count++] = server;
  }
  pthread_barrier_wait(&ready);
  pthread_barrier_wait(&go);
  for (int i = 0; i < count; ++i) {
    close(fds[i]);
  }
  for (int i = 0; i < after; ++i) {
    int client, server;
    open_pair(&client, &server);
    close(client);
    close(server);
  }
  free(fds);
  return NULL;
}

int main(int argc, char** argv) {
  if (argc != 5) {
    return 2;
  }
  threads = atoi(argv[1]);
  pairs = atoi(argv[2]);
  bytes_each = atoi(argv[3]);
  after = atoi(argv[4]);
  const struct rlimit files = {65536, 65536};
  (void)setrlimit(RLIMIT_NOFILE, &files);
  listener = socket(AF_INET, SOCK_STREAM, 0);
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof address;
  if (bind(listener, (const struct sockaddr*)&address, sizeof address) != 0 || listen(listener, 4096) != 0 ||
      getsockname(listener, (struct sockaddr*)&address, &length) != 0) {
    return 2;
  }
  pthread_barrier_init(&ready, NULL, (unsigned)threads + 1);
  pthread_barrier_init(&go, NULL, (unsigned)threads + 1);
  pthread_t workers[64];
  for (int i = 0; i < threads && i < 64; ++i) {
    pthread_create(&workers[i], NULL, open_then_close, NULL);
  }
  pthread_barrier_wait(&ready);
  printf("READY %d\n", getpid());
  fflush(stdout);
  usleep(300000);
  pthread_barrier_wait(&go);
  for (int i = 0; i < threads && i < 64; ++i) {
    pthread_join(workers[i], NULL);
  }
  close(listener);
  printf("done\n");
  return 0;
}
