/* fork_hand_over_app FORKS: two threads open and close loopback connection pairs without pause
 * (each close and connect hands a record to the shim's worker), while the main thread forks
 * FORKS children one after another. Each child makes a connection of its own, so that its exit
 * writes its records, and calls exit(0). Prints the number of children and how long the slowest
 * took from fork() to its reaping, in milliseconds: "children N slowest_ms M". */
#define _GNU_SOURCE
#include <pthread.h>
#include <sys/wait.h>
#include <time.h>

#include "loopback_pair.h"

static struct loopback_listener listener;
static struct sockaddr_in address;
static pthread_mutex_t accepting = PTHREAD_MUTEX_INITIALIZER;

static void* churn(void* unused) {
  (void)unused;
  for (;;) {
    const int client = socket(AF_INET, SOCK_STREAM, 0);
    if (client < 0 || connect(client, (const struct sockaddr*)&address, sizeof address) != 0) {
      _exit(2);
    }
    pthread_mutex_lock(&accepting);
    const int server = accept(listener.fd, NULL, NULL);
    pthread_mutex_unlock(&accepting);
    if (server < 0) {
      _exit(2);
    }
    close(client);
    close(server);
  }
  return NULL;
}

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
  listener = loopback_listen();
  address.sin_family = AF_INET;
  address.sin_port = htons((unsigned short)listener.port);
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  pthread_t churners[2];
  for (int i = 0; i < 2; ++i) {
    pthread_create(&churners[i], NULL, churn, NULL);
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
