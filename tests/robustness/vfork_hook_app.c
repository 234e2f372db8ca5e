/* vfork() as programs use it, under the shim's vfork() hook: 200 children, each of which closes
   the parent's connection, starts a child of its own with vfork() and reports that one's exit
   status in its own; a SIGALRM handler (every 300 us) that starts and waits for a vfork() child
   too. The parent writes one byte on its connection before and one after, then closes it.
   Prints "rounds 200 handler 1 connection 1". */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

enum { kRounds = 200 };

static volatile sig_atomic_t g_handler_children;

static void on_alarm(int signal_number) {
  (void)signal_number;
  const int saved = errno;
  const pid_t child = vfork();
  if (child == 0) {
    _exit(5);
  }
  int status = 0;
  if (child > 0 && waitpid(child, &status, 0) == child && WIFEXITED(status) && WEXITSTATUS(status) == 5) {
    g_handler_children = 1;
  }
  errno = saved;
}

/* A connected pair over loopback; the client end is returned, the server's in *server. */
static int connected_pair(int* server) {
  const int listener = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in addr = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t len = sizeof addr;
  if (listener < 0 || bind(listener, (struct sockaddr*)&addr, sizeof addr) != 0 || listen(listener, 1) != 0 ||
      getsockname(listener, (struct sockaddr*)&addr, &len) != 0) {
    return -1;
  }
  const int client = socket(AF_INET, SOCK_STREAM, 0);
  if (client < 0 || connect(client, (struct sockaddr*)&addr, sizeof addr) != 0) {
    return -1;
  }
  *server = accept(listener, NULL, NULL);
  close(listener);
  return *server < 0 ? -1 : client;
}

int main(void) {
  alarm(30);
  int server = -1;
  const int client = connected_pair(&server);
  if (client < 0 || write(client, "a", 1) != 1) {
    perror("connection");
    return 1;
  }
  struct sigaction action;
  memset(&action, 0, sizeof action);
  action.sa_handler = on_alarm;
  action.sa_flags = SA_RESTART;
  sigaction(SIGALRM, &action, NULL);
  const struct itimerval every = {{0, 300}, {0, 300}};
  setitimer(ITIMER_REAL, &every, NULL);
  int rounds = 0;
  for (int i = 0; i < kRounds; i++) {
    const pid_t child = vfork();
    if (child == 0) {
      close(client);
      const pid_t grandchild = vfork();
      if (grandchild == 0) {
        _exit(9);
      }
      int status = 0;
      _exit(grandchild > 0 && waitpid(grandchild, &status, 0) == grandchild && WEXITSTATUS(status) == 9 ? 7 : 1);
    }
    int status = 0;
    while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
    }
    if (WIFEXITED(status) && WEXITSTATUS(status) == 7) {
      rounds++;
    }
  }
  const struct itimerval off = {{0, 0}, {0, 0}};
  setitimer(ITIMER_REAL, &off, NULL);
  char bytes[2];
  const int connection_ok = write(client, "b", 1) == 1 && recv(server, bytes, 2, MSG_WAITALL) == 2;
  close(client);
  close(server);
  printf("rounds %d handler %d connection %d\n", rounds, (int)g_handler_children, connection_ok);
  return 0;
}
