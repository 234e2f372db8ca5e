/* What lazy_core.py runs under the shim to see when the core is loaded.
   handler: the first TCP socket is made inside a SIGALRM handler (installed with sigaction
     before the core): the core is not loaded there (dlopen is not async-signal-safe), but by
     the next TCP socket outside; the handler is then still the program's (sigaction reports
     it) and still runs.
   race: eight threads make the process's first TCP sockets at once and connect them to a
     listener made with raw system calls: each socket is tuned (TCP_NODELAY as the policy's
     nodelay = "on" sets it).
   Prints what it sees; exits 0 when it is as expected. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

static int core_mapped(void) {
  FILE* maps = fopen("/proc/self/maps", "r");
  char line[4096];
  int found = 0;
  while (maps != NULL && fgets(line, sizeof line, maps) != NULL) {
    found |= strstr(line, "libtcptune-core.so") != NULL;
  }
  if (maps != NULL) {
    fclose(maps);
  }
  return found;
}

static volatile sig_atomic_t g_handled;
static volatile sig_atomic_t g_handler_socket = -2;

static void on_alarm(int number) {
  (void)number;
  ++g_handled;
  if (g_handled == 1) {
    g_handler_socket = socket(AF_INET, SOCK_STREAM, 0);
  }
}

static int handler_case(void) {
  struct sigaction action;
  memset(&action, 0, sizeof action);
  action.sa_handler = on_alarm;
  sigemptyset(&action.sa_mask);
  sigaction(SIGALRM, &action, NULL);
  raise(SIGALRM);
  const int after_handler = core_mapped();
  printf("a TCP socket made in the handler: %s; the core is mapped after it: %s\n",
         g_handler_socket >= 0 ? "yes" : "no", after_handler ? "yes" : "no");
  const int outside = socket(AF_INET6, SOCK_STREAM, 0);
  const int after_outside = core_mapped();
  printf("the core is mapped after a TCP socket outside the handler: %s\n", after_outside ? "yes" : "no");
  struct sigaction current;
  memset(&current, 0, sizeof current);
  sigaction(SIGALRM, NULL, &current);
  const int reported = current.sa_handler == on_alarm;
  raise(SIGALRM);
  printf("sigaction reports the program's handler: %s; it ran %d times\n", reported ? "yes" : "no", (int)g_handled);
  close(outside);
  close(g_handler_socket);
  return g_handler_socket >= 0 && !after_handler && after_outside && reported && g_handled == 2 ? 0 : 1;
}

enum { kThreads = 8 };
static struct sockaddr_in g_listening;
static pthread_barrier_t g_start;
static int g_nodelay[kThreads];

static void* racing_client(void* slot) {
  int* nodelay = slot;
  pthread_barrier_wait(&g_start);
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0 || connect(fd, (struct sockaddr*)&g_listening, sizeof g_listening) != 0) {
    *nodelay = -1;
    return NULL;
  }
  socklen_t length = sizeof *nodelay;
  getsockopt(fd, IPPROTO_TCP, TCP_NODELAY, nodelay, &length);
  close(fd);
  return NULL;
}

static int race_case(void) {
  /* The listener by raw system calls: no hook sees it, so the threads' sockets come first. */
  const long listener = syscall(SYS_socket, AF_INET, SOCK_STREAM, 0);
  g_listening.sin_family = AF_INET;
  g_listening.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof g_listening;
  if (listener < 0 || syscall(SYS_bind, listener, &g_listening, sizeof g_listening) != 0 ||
      syscall(SYS_listen, listener, 64) != 0 || syscall(SYS_getsockname, listener, &g_listening, &length) != 0) {
    printf("raw listener failed\n");
    return 1;
  }
  pthread_barrier_init(&g_start, NULL, kThreads);
  pthread_t threads[kThreads];
  for (int i = 0; i < kThreads; ++i) {
    pthread_create(&threads[i], NULL, racing_client, &g_nodelay[i]);
  }
  int tuned = 0;
  for (int i = 0; i < kThreads; ++i) {
    pthread_join(threads[i], NULL);
    tuned += g_nodelay[i] == 1;
  }
  printf("%d of %d racing first sockets have TCP_NODELAY=1\n", tuned, kThreads);
  return tuned == kThreads ? 0 : 1;
}

int main(int argc, char** argv) {
  if (argc == 2 && strcmp(argv[1], "handler") == 0) {
    return handler_case();
  }
  if (argc == 2 && strcmp(argv[1], "race") == 0) {
    return race_case();
  }
  fprintf(stderr, "usage: lazy_core_app handler|race\n");
  return 2;
}
