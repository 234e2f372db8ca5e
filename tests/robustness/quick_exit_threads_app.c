/* Makes and closes 300 loopback connections (both ends here: 600 closes), then 16 threads
   call _exit(3) at the same moment. Usage: quick_exit_threads_app */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

enum { kConnections = 300, kThreads = 16 };

static int g_listener;
static int g_port;
static pthread_barrier_t g_barrier;

static void connect_and_close(void) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in addr = {
      .sin_family = AF_INET, .sin_port = htons((unsigned short)g_port), .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  if (fd < 0 || connect(fd, (struct sockaddr*)&addr, sizeof addr) != 0) {
    perror("connect");
    exit(1);
  }
  const int accepted = accept(g_listener, NULL, NULL);
  char byte = 'x';
  if (accepted < 0 || write(fd, &byte, 1) != 1 || read(accepted, &byte, 1) != 1) {
    perror("accept/write/read");
    exit(1);
  }
  close(accepted);
  close(fd);
}

static void* exit_at_once(void* unused) {
  (void)unused;
  pthread_barrier_wait(&g_barrier);
  _exit(3);
}

int main(void) {
  alarm(20);
  g_listener = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in addr = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t len = sizeof addr;
  if (bind(g_listener, (struct sockaddr*)&addr, sizeof addr) != 0 || listen(g_listener, 16) != 0 ||
      getsockname(g_listener, (struct sockaddr*)&addr, &len) != 0) {
    perror("listen");
    return 1;
  }
  g_port = ntohs(addr.sin_port);
  for (int i = 0; i < kConnections; i++) {
    connect_and_close();
  }
  pthread_barrier_init(&g_barrier, NULL, kThreads);
  pthread_t threads[kThreads];
  for (int i = 0; i < kThreads; i++) {
    pthread_create(&threads[i], NULL, exit_at_once, NULL);
  }
  pause();
  return 1;
}
