/* Makes and closes 300 loopback connections (both ends here: 600 closes), then 16 threads
   call _exit(3) at the same moment. Usage: quick_exit_threads_app */
#define _GNU_SOURCE
#include <pthread.h>
#include <unistd.h>

#include "loopback_pair.h"

enum { kConnections = 300, kThreads = 16 };

static pthread_barrier_t g_barrier;

static void* exit_at_once(void* unused) {
  (void)unused;
  pthread_barrier_wait(&g_barrier);
  _exit(3);
}

int main(void) {
  alarm(20);
  const struct loopback_listener listener = loopback_listen();
  for (int i = 0; i < kConnections; i++) {
    close(loopback_connect_through(listener));
  }
  pthread_barrier_init(&g_barrier, NULL, kThreads);
  pthread_t threads[kThreads];
  for (int i = 0; i < kThreads; i++) {
    pthread_create(&threads[i], NULL, exit_at_once, NULL);
  }
  pause();
  return 1;
}
