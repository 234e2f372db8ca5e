/* exit_churn_app THREADS MS: THREADS threads open and close loopback connection pairs (connect,
 * accept, close of both ends) one after another, without pause, while the main thread calls
 * exit(0) after MS milliseconds. Prints nothing; ends with status 0. */
#define _GNU_SOURCE
#include <pthread.h>

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

int main(int argc, char** argv) {
  if (argc != 3) {
    return 2;
  }
  const int threads = atoi(argv[1]);
  listener = loopback_listen();
  address.sin_family = AF_INET;
  address.sin_port = htons((unsigned short)listener.port);
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  pthread_t churners[64];
  for (int i = 0; i < threads && i < 64; ++i) {
    pthread_create(&churners[i], NULL, churn, NULL);
  }
  usleep((useconds_t)atoi(argv[2]) * 1000);
  exit(0);
}
