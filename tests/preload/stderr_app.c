/* An app that shares its stderr with the shim's log on stderr (TCPTUNE_LOG=stderr), for
 * stderr_log.py. Every mode makes loopback TCP connections (each gives conn_open and conn_close
 * records) and prints on stdout what the test checks:
 *   interleave CONNECTIONS LINES  one thread writes LINES lines of its own to fd 2, each in one
 *                                 write() of up to 4000 bytes, while another connects; prints
 *                                 "flags BEFORE AFTER" (fd 2's file status flags, F_GETFL)
 *   flood CONNECTIONS [pause]     connects, writes nothing of its own to fd 2, prints "done";
 *                                 with pause, prints "paused" first and waits for a line on
 *                                 stdin, then makes 10 more connections
 *   close_stderr PORT             connects, closes fd 2, connects to 127.0.0.1:PORT (the socket
 *                                 takes number 2), connects more, sends "payload from the app\n"
 *                                 on it, prints "fd N", then stays 1.5 s
 *   say CONNECTIONS               writes "app says hi\n" to fd 2, connects, prints "done"
 *   forked_exits CHILDREN         floods stderr's pipe with records, drains it itself through fd 3
 *                                 (its copy of the read end), connects once more (that record
 *                                 finds room), floods it again, then forks CHILDREN one after
 *                                 another, each connecting once and exiting; prints the seconds
 *                                 the longest exit took (from just before exit() to waitpid)
 */
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int listener = -1;
static struct sockaddr_in bound;

static void fail(const char* what) {
  perror(what);
  exit(2);
}

static void listen_on_loopback(void) {
  listener = socket(AF_INET, SOCK_STREAM, 0);
  if (listener < 0) fail("socket");
  memset(&bound, 0, sizeof bound);
  bound.sin_family = AF_INET;
  bound.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof bound;
  if (bind(listener, (struct sockaddr*)&bound, sizeof bound) != 0 || listen(listener, 64) != 0 ||
      getsockname(listener, (struct sockaddr*)&bound, &length) != 0)
    fail("listen");
}

static void one_connection(void) {
  const int client = socket(AF_INET, SOCK_STREAM, 0);
  if (client < 0 || connect(client, (struct sockaddr*)&bound, sizeof bound) != 0) fail("connect");
  const int server = accept(listener, NULL, NULL);
  if (server < 0) fail("accept");
  char data[100];
  memset(data, 'x', sizeof data);
  if (write(client, data, sizeof data) != (ssize_t)sizeof data) fail("write");
  close(client);
  close(server);
}

static void* connect_many(void* count) {
  for (long i = 0; i < (long)count; ++i) one_connection();
  return NULL;
}

static double seconds_now(void) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return (double)now.tv_sec + (double)now.tv_nsec / 1e9;
}

/* Connections, then a pause in which the worker writes their records. */
static void flood_and_settle(long connections) {
  connect_many((void*)connections);
  const struct timespec settle = {0, 300000000};
  nanosleep(&settle, NULL);
}

/* Line i: "app line i <padding>\n", one write(), 12 to 4000 bytes. */
static void* write_lines(void* count) {
  static char line[4096];
  for (long i = 0; i < (long)count; ++i) {
    int length = snprintf(line, sizeof line, "app line %ld ", i);
    const int padding = (int)((i * 397) % 3980);
    memset(line + length, 'a' + (int)(i % 26), (size_t)padding);
    length += padding;
    line[length++] = '\n';
    if (write(STDERR_FILENO, line, (size_t)length) != length) fail("write stderr");
  }
  return NULL;
}

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: stderr_app interleave|flood|close_stderr|say|forked_exits N [LINES]\n");
    return 2;
  }
  const long count = atol(argv[2]);
  const int flags_before = fcntl(STDERR_FILENO, F_GETFL);
  listen_on_loopback();
  if (strcmp(argv[1], "interleave") == 0 && argc == 4) {
    pthread_t writer, connector;
    pthread_create(&writer, NULL, write_lines, (void*)atol(argv[3]));
    pthread_create(&connector, NULL, connect_many, (void*)count);
    pthread_join(writer, NULL);
    pthread_join(connector, NULL);
    printf("flags %d %d\n", flags_before, fcntl(STDERR_FILENO, F_GETFL));
  } else if (strcmp(argv[1], "flood") == 0) {
    connect_many((void*)count);
    if (argc == 4 && strcmp(argv[3], "pause") == 0) {
      printf("paused\n");
      fflush(stdout);
      char line[64];
      if (fgets(line, sizeof line, stdin) == NULL) return 3;
      connect_many((void*)10);
    }
    printf("done\n");
  } else if (strcmp(argv[1], "say") == 0) {
    static const char hi[] = "app says hi\n";
    if (write(STDERR_FILENO, hi, sizeof hi - 1) != (ssize_t)(sizeof hi - 1)) fail("write stderr");
    connect_many((void*)count);
    printf("done\n");
  } else if (strcmp(argv[1], "forked_exits") == 0) {
    flood_and_settle(40);
    if (fcntl(3, F_SETFL, O_NONBLOCK) != 0) fail("fd 3");
    char drained[65536];
    while (read(3, drained, sizeof drained) > 0) {
    }
    flood_and_settle(1);
    flood_and_settle(40);
    /* Each child's exit alone: from just before its exit() (its time, sent through a pipe) to
     * its parent's waitpid, the longest printed, in seconds. */
    int exiting[2];
    if (pipe(exiting) != 0) fail("pipe");
    double longest = 0;
    for (long i = 0; i < count; ++i) {
      const pid_t child = fork();
      if (child < 0) fail("fork");
      if (child == 0) {
        one_connection();
        const double at_exit = seconds_now();
        if (write(exiting[1], &at_exit, sizeof at_exit) != (ssize_t)sizeof at_exit) _exit(3);
        exit(0);
      }
      double at_exit = 0;
      if (read(exiting[0], &at_exit, sizeof at_exit) != (ssize_t)sizeof at_exit) fail("read");
      if (waitpid(child, NULL, 0) != child) fail("waitpid");
      const double took = seconds_now() - at_exit;
      longest = took > longest ? took : longest;
    }
    printf("%.3f\n", longest);
  } else if (strcmp(argv[1], "close_stderr") == 0) {
    one_connection();
    close(STDERR_FILENO);
    struct sockaddr_in peer;
    memset(&peer, 0, sizeof peer);
    peer.sin_family = AF_INET;
    peer.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    peer.sin_port = htons((unsigned short)count);
    const int connection = socket(AF_INET, SOCK_STREAM, 0);
    if (connection < 0 || connect(connection, (struct sockaddr*)&peer, sizeof peer) != 0) return 3;
    connect_many((void*)5);
    static const char payload[] = "payload from the app\n";
    if (write(connection, payload, sizeof payload - 1) != (ssize_t)(sizeof payload - 1)) return 3;
    close(connection);
    printf("fd %d\n", connection);
    fflush(stdout);
    const struct timespec stay = {1, 500000000};
    nanosleep(&stay, NULL);
  } else {
    return 2;
  }
  return 0;
}
