/* A program that starts a child with clone(CLONE_VM | CLONE_VFORK) itself (as posix_spawn does
   inside libc, without libc's vfork(), so no hook sees the child start): the child runs in the
   parent's memory and then calls _exit, execs /bin/true, fails an exec, or closes one of the
   parent's connections and _exits. Around it the parent makes 11 loopback connections (both
   ends here), 5 before the child, 5 after and one open across it, and closes them all.
   "rawfork": a child of a raw fork system call (its own copy of the memory, no fork handlers run,
   no worker thread) that _exits; "rawfork_exit" the same that calls exit(); "Fork_exit" a child
   of _Fork() (no fork handlers either) that calls exit().
   Usage: raw_clone_child_app none|exit|exec|failexec|close|rawfork|rawfork_exit|Fork_exit */
#define _GNU_SOURCE
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "loopback_pair.h"

static struct loopback_listener g_listener;
static const char* g_mode;
static int g_across = -1;

static int connect_one(void) {
  return loopback_connect_through(g_listener);
}

static int child(void* unused) {
  (void)unused;
  char* argv[] = {"/bin/true", NULL};
  if (strcmp(g_mode, "exec") == 0) {
    execv("/bin/true", argv);
  } else if (strcmp(g_mode, "failexec") == 0) {
    execv("/nonexistent/true", argv);
  } else if (strcmp(g_mode, "close") == 0) {
    close(g_across);
  }
  _exit(0);
}

int main(int argc, char** argv) {
  alarm(20);
  g_mode = argc > 1 ? argv[1] : "none";
  g_listener = loopback_listen();
  for (int i = 0; i < 5; i++) {
    close(connect_one());
  }
  g_across = connect_one();
  if (strncmp(g_mode, "rawfork", 7) == 0 || strcmp(g_mode, "Fork_exit") == 0) {
    const long pid = strcmp(g_mode, "Fork_exit") == 0 ? _Fork() : syscall(SYS_fork);
    if (pid == 0) {
      if (strcmp(g_mode, "rawfork") == 0) {
        _exit(0);
      }
      exit(0);
    }
    int status = 0;
    if (pid < 0 || waitpid((pid_t)pid, &status, 0) != pid) {
      perror("fork");
      return 1;
    }
  } else if (strcmp(g_mode, "none") != 0) {
    static char stack[1 << 16];
    const pid_t pid = clone(child, stack + sizeof stack, CLONE_VM | CLONE_VFORK | SIGCHLD, NULL);
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) != pid) {
      perror("clone");
      return 1;
    }
  }
  for (int i = 0; i < 5; i++) {
    close(connect_one());
  }
  close(g_across);
  printf("done %d\n", (int)getpid());
  return 0;
}
