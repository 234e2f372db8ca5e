/* What exec_records.py runs under the shim: a program that opens TCP connections on loopback,
   writes on them, closes some, then execs.
     exec FUNC     execs /bin/true (or `true` from PATH) with FUNC: execve, execv, execvp,
                   execvpe, execl, execlp, execle, fexecve or execveat.
     vfork         a vfork() child execs /bin/true; the parent goes on writing, closes all, exits.
     failed FUNC   FUNC of a program that does not exist fails (ENOENT, errno kept); the program
                   goes on writing, closes all, exits.
     noexec PATH   execve of PATH, executable but of no format the kernel runs, fails (ENOEXEC);
                   the program goes on as after `failed`.
     signal        execve of /bin/true from inside a SIGUSR1 handler.
   Before it execs it prints one line on stdout, "wrote W bytes B connections C", counting every
   descriptor of a connection (client and accepted end); after a failed exec, a second one with
   what it did after it. Two connections stay open across the exec: a client made with
   SOCK_CLOEXEC (exec closes it) and one without (the program exec'd inherits it), each with
   its accepted end made the same way. Exit status 0 when every call did what it should. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

enum { kClosedClients = 8, kWritesEach = 25, kWriteSize = 100 };

static unsigned long g_writes;
static unsigned long g_bytes;
static unsigned long g_connections;
static struct sockaddr_in g_address;
static int g_listener = -1;

static void fail(const char* what) {
  fprintf(stderr, "exec_app: %s: %s\n", what, strerror(errno));
  exit(2);
}

static void write_some(int fd, int count) {
  char buffer[kWriteSize];
  memset(buffer, 'x', sizeof buffer);
  for (int i = 0; i < count; ++i) {
    if (write(fd, buffer, sizeof buffer) != (ssize_t)sizeof buffer) {
      fail("write");
    }
    ++g_writes;
    g_bytes += sizeof buffer;
  }
}

/* A connected client and its accepted end, both with FD_CLOEXEC when asked. */
static int connect_one(int cloexec, int* accepted) {
  const int fd = socket(AF_INET, SOCK_STREAM | (cloexec ? SOCK_CLOEXEC : 0), 0);
  if (fd < 0 || connect(fd, (struct sockaddr*)&g_address, sizeof g_address) != 0) {
    fail("connect");
  }
  *accepted = accept4(g_listener, NULL, NULL, cloexec ? SOCK_CLOEXEC : 0);
  if (*accepted < 0) {
    fail("accept4");
  }
  g_connections += 2;
  return fd;
}

static int g_kept_cloexec = -1;
static int g_kept_inherited = -1;
static int g_kept_accepted[2] = {-1, -1};

static void set_up(void) {
  g_listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  g_address.sin_family = AF_INET;
  g_address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof g_address;
  if (g_listener < 0 || bind(g_listener, (struct sockaddr*)&g_address, sizeof g_address) != 0 ||
      listen(g_listener, 64) != 0 || getsockname(g_listener, (struct sockaddr*)&g_address, &length) != 0) {
    fail("listen");
  }
  g_kept_cloexec = connect_one(1, &g_kept_accepted[0]);
  g_kept_inherited = connect_one(0, &g_kept_accepted[1]);
  write_some(g_kept_cloexec, kWritesEach);
  write_some(g_kept_inherited, kWritesEach);
  /* Closed just before the exec: their conn_close records are still on their way to the log. */
  for (int i = 0; i < kClosedClients; ++i) {
    int accepted = -1;
    const int fd = connect_one(i % 2, &accepted);
    write_some(fd, kWritesEach);
    close(fd);
    close(accepted);
  }
}

static void say_tally(void) {
  printf("wrote %lu bytes %lu connections %lu\n", g_writes, g_bytes, g_connections);
  fflush(stdout);
  g_writes = g_bytes = g_connections = 0;
}

/* After a failed exec: more writes on the connections still open, then all of them closed. */
static int carry_on(void) {
  int accepted = -1;
  const int fd = connect_one(0, &accepted);
  write_some(fd, kWritesEach);
  write_some(g_kept_cloexec, kWritesEach);
  write_some(g_kept_inherited, kWritesEach);
  close(fd);
  close(accepted);
  close(g_kept_cloexec);
  close(g_kept_inherited);
  close(g_kept_accepted[0]);
  close(g_kept_accepted[1]);
  say_tally();
  return 0;
}

static int exec_with(const char* function, int missing) {
  const char* path = missing ? "/nonexistent/tcptune-no-such-program" : "/bin/true";
  const char* file = missing ? "tcptune-no-such-program" : "true";
  char* argv[] = {(char*)file, NULL};
  if (strcmp(function, "execve") == 0) {
    return execve(path, argv, environ);
  }
  if (strcmp(function, "execv") == 0) {
    return execv(path, argv);
  }
  if (strcmp(function, "execvp") == 0) {
    return execvp(file, argv);
  }
  if (strcmp(function, "execvpe") == 0) {
    return execvpe(file, argv, environ);
  }
  if (strcmp(function, "execl") == 0) {
    return execl(path, file, (char*)NULL);
  }
  if (strcmp(function, "execlp") == 0) {
    return execlp(file, file, (char*)NULL);
  }
  if (strcmp(function, "execle") == 0) {
    return execle(path, file, (char*)NULL, environ);
  }
  if (strcmp(function, "fexecve") == 0) {
    const int program = open(missing ? "/dev/null" : path, O_RDONLY | O_CLOEXEC);
    return fexecve(program, argv, environ);
  }
  if (strcmp(function, "execveat") == 0) {
    return (int)execveat(AT_FDCWD, path, argv, environ, 0);
  }
  fprintf(stderr, "exec_app: no exec function %s\n", function);
  exit(2);
}

static void exec_in_handler(int number) {
  (void)number;
  char* argv[] = {"true", NULL};
  execve("/bin/true", argv, environ);
  _exit(3);
}

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: exec_app exec|vfork|failed|noexec|signal [FUNC|PATH]\n");
    return 2;
  }
  const char* mode = argv[1];
  const char* argument = argc > 2 ? argv[2] : "execve";
  set_up();
  if (strcmp(mode, "exec") == 0) {
    say_tally();
    exec_with(argument, 0);
    fail("exec");
  }
  if (strcmp(mode, "failed") == 0) {
    say_tally();
    errno = 0;
    const int result = exec_with(argument, 1);
    /* fexecve of /dev/null: not executable (EACCES), as a missing program is not found. */
    const int expected = strcmp(argument, "fexecve") == 0 ? EACCES : ENOENT;
    if (result != -1 || errno != expected) {
      fprintf(stderr, "exec_app: %s returned %d, errno %d (%s), not -1 and %d\n", argument, result, errno,
              strerror(errno), expected);
      return 1;
    }
    return carry_on();
  }
  if (strcmp(mode, "noexec") == 0) {
    say_tally();
    char* args[] = {(char*)argument, NULL};
    errno = 0;
    const int result = execve(argument, args, environ);
    if (result != -1 || errno != ENOEXEC) {
      fprintf(stderr, "exec_app: execve returned %d, errno %d (%s), not ENOEXEC\n", result, errno, strerror(errno));
      return 1;
    }
    return carry_on();
  }
  if (strcmp(mode, "vfork") == 0) {
    say_tally();
    char* args[] = {"true", NULL};
    const pid_t child = vfork();
    if (child == 0) {
      execve("/bin/true", args, environ);
      _exit(127);
    }
    int status = 0;
    if (child < 0 || waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      fprintf(stderr, "exec_app: the vfork child did not exec /bin/true (status %d)\n", status);
      return 1;
    }
    return carry_on();
  }
  if (strcmp(mode, "signal") == 0) {
    say_tally();
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = exec_in_handler;
    sigemptyset(&action.sa_mask);
    sigaction(SIGUSR1, &action, NULL);
    raise(SIGUSR1);
    return 4;
  }
  fprintf(stderr, "exec_app: no mode %s\n", mode);
  return 2;
}
