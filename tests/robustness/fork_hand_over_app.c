/* fork_hand_over_app FORKS: two threads open and close loopback connection pairs without pause
 * (each close and connect hands a record to the shim's worker), while the main thread forks
 * FORKS children one after another. Each child makes a connection of its own, so that its exit
 * writes its records, and calls exit(0). Prints the number of children and how long the slowest
 * took from fork() to its reaping, in milliseconds: "children N slowest_ms M". */
#define _GNU_SOURCE
#include <sys/wait.h>
#include <time.h>

#include "churn_pairs.h"

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

int main(int argc, char** argv) {
  if (argc != 2) {
    return 2;
  }
  const int forks = atoi(argv[1]);
  churn_listen();
  pthread_t churners[2];
  for (int i = 0; i < 2; ++i) {
    pthread_create(&churners[i], NULL, churn_pairs, NULL);
  }
  usleep(50 * 1000);
  double slowest = 0;
  for (int i = 0; i < forks; ++i) {
    const double start = now_ms();
    const pid_t child = fork();
    if (child < 0) {
      return 2;
    }
    if (child == 0) {
      const struct loopback_listener own = loopback_listen();
      close(loopback_connect_through(own));
      exit(0);
    }
    int status = 0;
    if (waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      return 3;
    }
    const double took = now_ms() - start;
    slowest = took > slowest ? took : slowest;
  }
  printf("children %d slowest_ms %.1f\n", forks, slowest);
  fflush(stdout);
  _exit(0); /* the churning threads go with the process */
}
