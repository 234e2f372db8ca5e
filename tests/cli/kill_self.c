/* A program that ends by a signal, for the exit-status test of `tcptune run` and `tcptune ab`:
 *
 *   kill_self term|kill|segv|wait|report PORT DIR
 *
 * Connects to 127.0.0.1:PORT, writes a byte and closes, so that tcptune has a connection to
 * show; when TCPTUNE_LOG names a file, waits (at most 5 s) until a conn_close record is in it.
 * Then it moves to DIR, so that a core dump of its own lands there and not beside tcptune's,
 * and dies: by kill(SIGTERM), kill(SIGKILL), a store through a null pointer (SIGSEGV), or,
 * with "wait", prints "ready" and waits for a signal from outside. With "report", it prints how
 * it started, "SIGINT default SIGQUIT default SIGTERM default SIGHUP ignored blocked none", and
 * exits 0. Exits 2 on any failure.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static void die(const char* what) {
  fprintf(stderr, "kill_self: %s: %s\n", what, strerror(errno));
  exit(2);
}

static int log_has_conn_close(const char* path) {
  FILE* log = fopen(path, "r");
  if (log == NULL) {
    return 0;
  }
  char line[8192];
  int found = 0;
  while (!found && fgets(line, sizeof line, log) != NULL) {
    found = strstr(line, "\"conn_close\"") != NULL;
  }
  fclose(log);
  return found;
}

static int report_signals(void) {
  static const struct {
    int number;
    const char* name;
  } kSignals[] = {{SIGINT, "SIGINT"}, {SIGQUIT, "SIGQUIT"}, {SIGTERM, "SIGTERM"}, {SIGHUP, "SIGHUP"}};
  sigset_t blocked;
  sigprocmask(SIG_SETMASK, NULL, &blocked);
  int any_blocked = 0;
  for (size_t i = 0; i < sizeof kSignals / sizeof kSignals[0]; ++i) {
    struct sigaction action;
    sigaction(kSignals[i].number, NULL, &action);
    printf("%s%s %s", i == 0 ? "" : " ", kSignals[i].name, action.sa_handler == SIG_IGN ? "ignored" : "default");
    any_blocked |= sigismember(&blocked, kSignals[i].number);
  }
  printf(" blocked %s\n", any_blocked ? "some" : "none");
  return 0;
}

int main(int argc, char** argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: kill_self term|kill|segv|wait|report PORT DIR\n");
    return 2;
  }
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    die("socket");
  }
  struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((unsigned short)atoi(argv[2]))};
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, (struct sockaddr*)&addr, sizeof addr) != 0) {
    die("connect");
  }
  if (write(fd, "x", 1) != 1) {
    die("write");
  }
  close(fd);
  const char* log = getenv("TCPTUNE_LOG");
  for (int waited_ms = 0; log != NULL && !log_has_conn_close(log) && waited_ms < 5000; waited_ms += 10) {
    const struct timespec pause_10ms = {0, 10 * 1000 * 1000};
    nanosleep(&pause_10ms, NULL);
  }
  if (chdir(argv[3]) != 0) {
    die("chdir");
  }
  if (strcmp(argv[1], "report") == 0) {
    return report_signals();
  }
  if (strcmp(argv[1], "term") == 0) {
    kill(getpid(), SIGTERM);
  } else if (strcmp(argv[1], "kill") == 0) {
    kill(getpid(), SIGKILL);
  } else if (strcmp(argv[1], "segv") == 0) {
    volatile int* volatile nowhere = NULL; /* volatile: the compiler keeps the load and the store */
    *nowhere = 1;
  } else if (strcmp(argv[1], "wait") == 0) {
    printf("ready\n");
    fflush(stdout);
    for (;;) {
      pause();
    }
  }
  fprintf(stderr, "kill_self: still alive after '%s'\n", argv[1]);
  return 2;
}
