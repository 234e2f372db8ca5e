/* exit_churn_app THREADS MS: THREADS threads open and close loopback connection pairs (connect,
 * accept, close of both ends) one after another, without pause, while the main thread calls
 * exit(0) after MS milliseconds. Prints nothing; ends with status 0. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

static int listener;
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
    const int server = accept(listener, NULL, NULL);
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
  listener = socket(AF_INET, SOCK_STREAM, 0);
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof address;
  if (bind(listener, (const struct sockaddr*)&address, sizeof address) != 0 || listen(listener, 4096) != 0 ||
      getsockname(listener, (struct sockaddr*)&address, &length) != 0) {
    return 2;
  }
  pthread_t churners[64];
  for (int i = 0; i < threads && i < 64; ++i) {
    pthread_create(&churners[i], NULL, churn, NULL);
  }
  usleep((useconds_t)atoi(argv[2]) * 1000);
  exit(0);
}
