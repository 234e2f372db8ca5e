/* hand_over_races_app MODE MS: two threads open and close loopback connection pairs without
 * pause (each close and connect hands a record to the shim's worker) for MS milliseconds, then
 * the main thread calls exit(0). Meanwhile, by MODE:
 *   dup     another thread dup()s the descriptor a churning thread is about to close, and keeps
 *           600 copies open: a copy made while the close hands its record over;
 *   cancel  the main thread cancels a churning thread every 1 to 4 ms and starts another, which
 *           (with the worker held up) is often waiting for room in the worker's ring.
 * Prints "cancels N" in mode cancel. */
#define _GNU_SOURCE
#include <string.h>
#include <time.h>

#include "churn_pairs.h"

static void* duplicate(void* unused) {
  (void)unused;
  for (int kept = 0; kept < 600;) {
    const int fd = atomic_load(&churn_closing_fd);
    if (fd >= 0 && dup(fd) >= 0) {
      ++kept;
    }
  }
  return NULL;
}

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

int main(int argc, char** argv) {
  if (argc != 3) {
    return 2;
  }
  const char* mode = argv[1];
  const double end = now_s() + atoi(argv[2]) / 1000.0;
  churn_listen();
  pthread_t threads[3];
  for (int i = 0; i < 2; ++i) {
    pthread_create(&threads[i], NULL, churn_pairs, NULL);
  }
  if (strcmp(mode, "dup") == 0) {
    pthread_create(&threads[2], NULL, duplicate, NULL);
    while (now_s() < end) {
      usleep(10000);
    }
  } else if (strcmp(mode, "cancel") == 0) {
    int cancels = 0;
    for (unsigned seed = 1; now_s() < end; ++cancels) {
      usleep(1000 + (unsigned)rand_r(&seed) % 3000);
      const int i = rand_r(&seed) % 2;
      pthread_cancel(threads[i]);
      pthread_join(threads[i], NULL);
      pthread_create(&threads[i], NULL, churn_pairs, NULL);
    }
    printf("cancels %d\n", cancels);
    fflush(stdout);
  } else {
    return 2;
  }
  exit(0);
}
