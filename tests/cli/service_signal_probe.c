/* A service's program under a wrapped ExecStart= (tcptune run as the main process): says whether
   LISTEN_PID and WATCHDOG_PID name it and whether descriptor 3 (LISTEN_FDS) reached it, then names
   each signal it gets, until SIGTERM ends it. Built static, so tcptune run supervises it. */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void say(const char* text) {
  (void)!write(1, text, strlen(text));
}

static void on_signal(int number) {
  switch (number) {
    case SIGHUP: say("got SIGHUP\n"); break;
    case SIGUSR1: say("got SIGUSR1\n"); break;
    case SIGUSR2: say("got SIGUSR2\n"); break;
    case SIGTERM: say("got SIGTERM\n"); _exit(0);
    default: break;
  }
}

static int names_me(const char* name) {
  const char* value = getenv(name);
  return value != NULL && atol(value) == (long)getpid();
}

int main(void) {
  const int handled[] = {SIGHUP, SIGUSR1, SIGUSR2, SIGTERM};
  for (unsigned i = 0; i < sizeof handled / sizeof handled[0]; ++i) {
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = on_signal;
    sigaction(handled[i], &action, NULL);
  }
  alarm(30); /* bounded, whatever the test does */
  char line[128];
  snprintf(line, sizeof line, "ready listen_pid=%d watchdog_pid=%d fd3=%d\n", names_me("LISTEN_PID"),
           names_me("WATCHDOG_PID"), fcntl(3, F_GETFD) >= 0);
  say(line);
  for (;;) {
    pause();
  }
}
