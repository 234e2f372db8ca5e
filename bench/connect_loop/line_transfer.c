/* How long one cache line takes to go from one CPU to another here: two threads, one on each
 * CPU, hand a counter back and forth. A record handed from the app's thread to tcptune's
 * worker on another CPU moves its cache lines this way (and back, when the app writes them
 * again), so this time, against a system call's, says where a logged connection's floor lies
 * (bench/connect_loop/run.py reports it beside the loop).
 *
 *   tcptune_line_transfer CPU_A CPU_B     prints {"cpus":[A,B],"ns_per_transfer":...}
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

enum { kHandOvers = 1000000 };

static _Alignas(64) atomic_long g_turn;

static int pin(int cpu) {
  cpu_set_t only;
  CPU_ZERO(&only);
  CPU_SET(cpu, &only);
  return pthread_setaffinity_np(pthread_self(), sizeof only, &only);
}

/* Waits for `mine` (even or odd turns), then passes the turn on. */
static void take_turns(long first) {
  for (long turn = first; turn < 2L * kHandOvers; turn += 2) {
    while (atomic_load_explicit(&g_turn, memory_order_acquire) != turn) {
    }
    atomic_store_explicit(&g_turn, turn + 1, memory_order_release);
  }
}

static int g_other_cpu;

static void* other_side(void* unused) {
  (void)unused;
  if (pin(g_other_cpu) != 0) {
    exit(77);
  }
  take_turns(1);
  return NULL;
}

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s CPU_A CPU_B\n", argv[0]);
    return 2;
  }
  const int cpu = atoi(argv[1]);
  g_other_cpu = atoi(argv[2]);
  if (cpu == g_other_cpu) {
    fprintf(stderr, "line_transfer: two different CPUs are needed\n");
    return 2;
  }
  if (pin(cpu) != 0) {
    fprintf(stderr, "line_transfer: CPU %d is not available\n", cpu);
    return 77;
  }
  pthread_t other;
  if (pthread_create(&other, NULL, other_side, NULL) != 0) {
    return 1;
  }
  struct timespec start;
  struct timespec end;
  clock_gettime(CLOCK_MONOTONIC, &start);
  take_turns(0);
  clock_gettime(CLOCK_MONOTONIC, &end);
  pthread_join(other, NULL);
  const double ns = (double)(end.tv_sec - start.tv_sec) * 1e9 + (double)(end.tv_nsec - start.tv_nsec);
  printf("{\"cpus\":[%d,%d],\"ns_per_transfer\":%.1f}\n", cpu, g_other_cpu, ns / (2.0 * kHandOvers));
  return 0;
}
