/* Keeps one CPU busy with memory work (memset over 8 MiB, over and over) until killed: beside
 * the connect loop on another CPU (bench/connect_loop/run.py --neighbour), it shows how much a
 * busy thread on a neighbouring CPU slows the loop, as tcptune's worker does while it formats
 * and writes records. On a VM whose vCPUs share a core's caches and execution units, that is
 * much more than the loop's own work would suggest.
 *
 *   tcptune_neighbour_load CPU
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { kBytes = 8 << 20 };

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: tcptune_neighbour_load CPU\n");
    return 2;
  }
  cpu_set_t only;
  CPU_ZERO(&only);
  CPU_SET(atoi(argv[1]), &only);
  if (sched_setaffinity(0, sizeof only, &only) != 0) {
    perror("sched_setaffinity");
    return 1;
  }
  unsigned char* buffer = malloc(kBytes);
  if (buffer == NULL) {
    return 1;
  }
  for (unsigned round = 0;; ++round) {
    memset(buffer, (int)round, kBytes);
    __asm__ volatile("" : : "r"(buffer) : "memory");
  }
}
