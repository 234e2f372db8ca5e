/* exit_churn_app THREADS MS: THREADS threads open and close loopback connection pairs (connect,
 * accept, close of both ends) one after another, without pause, while the main thread calls
 * exit(0) after MS milliseconds. Prints nothing; ends with status 0. */
#define _GNU_SOURCE
#include "churn_pairs.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    return 2;
  }
  const int threads = atoi(argv[1]);
  churn_listen();
  pthread_t churners[64];
  for (int i = 0; i < threads && i < 64; ++i) {
    pthread_create(&churners[i], NULL, churn_pairs, NULL);
  }
  usleep((useconds_t)atoi(argv[2]) * 1000);
  exit(0);
}
