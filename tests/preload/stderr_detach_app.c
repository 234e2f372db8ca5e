/* stderr_detach_app MODE PIDFILE: makes a loopback TCP connection (the shim's log on stderr
 * opens), forks, and the parent exits at once; the child detaches as daemons do and lives 10 s,
 * making another connection, with its pid in PIDFILE.
 *   freopen  setsid, then stdin, stdout and stderr reopened on /dev/null with freopen(3)
 *   daemon   daemon(3) (glibc's dup2 inside it is not a hook's)
 * Without tcptune, a caller reading the app's stderr (`out=$(app 2>&1)`) sees its end when the
 * parent exits: the child keeps nothing of it. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static void one_connection(void) {
  const int listener = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in address;
  memset(&address, 0, sizeof address);
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof address;
  if (bind(listener, (struct sockaddr*)&address, sizeof address) != 0 || listen(listener, 1) != 0 ||
      getsockname(listener, (struct sockaddr*)&address, &length) != 0) {
    exit(2);
  }
  const int client = socket(AF_INET, SOCK_STREAM, 0);
  if (connect(client, (struct sockaddr*)&address, sizeof address) != 0) {
    exit(3);
  }
  const int accepted = accept(listener, NULL, NULL);
  (void)!write(client, "x", 1);
  char byte = 0;
  (void)!read(accepted, &byte, 1);
  close(accepted);
  close(client);
  close(listener);
}

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: stderr_detach_app freopen|daemon PIDFILE\n");
    return 2;
  }
  one_connection();
  if (fork() != 0) {
    return 0;
  }
  if (strcmp(argv[1], "freopen") == 0) {
    (void)setsid();
    if (freopen("/dev/null", "r", stdin) == NULL || freopen("/dev/null", "w", stdout) == NULL ||
        freopen("/dev/null", "w", stderr) == NULL) {
      return 4;
    }
  } else if (daemon(1, 0) != 0) {
    return 5;
  }
  FILE* pidfile = fopen(argv[2], "w");
  if (pidfile == NULL) {
    return 6;
  }
  fprintf(pidfile, "%d\n", (int)getpid());
  fclose(pidfile);
  one_connection();
  sleep(10);
  return 0;
}
