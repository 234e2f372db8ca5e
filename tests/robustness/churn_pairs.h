/* Threads that open and close loopback connection pairs (connect, accept, close of both ends)
   one after another without pause, for tests of what other threads do meanwhile: each close and
   connect hands a record to the shim's worker. churn_listen() first; then churn_pairs as a
   pthread body. A failed socket() ends the program with status 2. */
#ifndef TCPTUNE_TESTS_CHURN_PAIRS_H
#define TCPTUNE_TESTS_CHURN_PAIRS_H

#include <pthread.h>
#include <stdatomic.h>

#include "loopback_pair.h"

static struct loopback_listener churn_listener;
static struct sockaddr_in churn_address;
static pthread_mutex_t churn_accepting = PTHREAD_MUTEX_INITIALIZER;
/* The client end a churning thread is about to close. */
static atomic_int churn_closing_fd = -1;

static inline void churn_listen(void) {
  churn_listener = loopback_listen();
  churn_address.sin_family = AF_INET;
  churn_address.sin_port = htons((unsigned short)churn_listener.port);
  churn_address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
}

static inline void* churn_pairs(void* unused) {
  (void)unused;
  for (;;) {
    const int client = socket(AF_INET, SOCK_STREAM, 0);
    if (client < 0) {
      _exit(2);
    }
    if (connect(client, (const struct sockaddr*)&churn_address, sizeof churn_address) != 0) {
      close(client);
      continue;  // a cancelled thread's half-made connection can take the listener's backlog
    }
    int state = 0;
    pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &state);  // not cancelled holding the mutex
    pthread_mutex_lock(&churn_accepting);
    const int server = accept(churn_listener.fd, NULL, NULL);
    pthread_mutex_unlock(&churn_accepting);
    pthread_setcancelstate(state, NULL);
    atomic_store(&churn_closing_fd, client);
    close(client);
    if (server >= 0) {
      close(server);
    }
    pthread_testcancel();
  }
  return NULL;
}

#endif
