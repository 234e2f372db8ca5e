/* A request/response client and server on loopback in one thread, for `tcptune ab`. Each request
 * goes out as two small writes (a header, then a body) before the reply is read: with Nagle on,
 * the body waits for the ack of the header, which the receiver delays (about 40 ms on Linux);
 * with TCP_NODELAY it goes at once. Each request's latency is appended, in seconds, to the file
 * TCPTUNE_AB_LATENCY_FILE names, as `tcptune ab` documents.
 *   nagle_pair [REQUESTS]   (default 20) */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static int read_exactly(int fd, char* buffer, size_t size) {
  size_t got = 0;
  while (got < size) {
    const ssize_t n = read(fd, buffer + got, size - got);
    if (n <= 0) {
      return -1;
    }
    got += (size_t)n;
  }
  return 0;
}

int main(int argc, char** argv) {
  const int requests = argc > 1 ? atoi(argv[1]) : 20;
  struct sockaddr_in address;
  memset(&address, 0, sizeof address);
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof address;
  const int listener = socket(AF_INET, SOCK_STREAM, 0);
  if (listener < 0 || bind(listener, (struct sockaddr*)&address, sizeof address) != 0 || listen(listener, 1) != 0 ||
      getsockname(listener, (struct sockaddr*)&address, &length) != 0) {
    perror("nagle_pair: listen");
    return 1;
  }
  const int client = socket(AF_INET, SOCK_STREAM, 0);
  if (client < 0 || connect(client, (struct sockaddr*)&address, sizeof address) != 0) {
    perror("nagle_pair: connect");
    return 1;
  }
  const int server = accept(listener, NULL, NULL);
  if (server < 0) {
    perror("nagle_pair: accept");
    return 1;
  }
  double* latencies = calloc((size_t)(requests > 0 ? requests : 1), sizeof *latencies);
  char header[16];
  char body[48];
  char request[64];
  char reply[2];
  memset(header, 'h', sizeof header);
  memset(body, 'b', sizeof body);
  for (int i = 0; i < requests; ++i) {
    const double start = now_s();
    if (write(client, header, sizeof header) != (ssize_t)sizeof header ||
        write(client, body, sizeof body) != (ssize_t)sizeof body || read_exactly(server, request, sizeof request) != 0 ||
        write(server, "ok", 2) != 2 || read_exactly(client, reply, sizeof reply) != 0) {
      perror("nagle_pair: request");
      return 1;
    }
    latencies[i] = now_s() - start;
  }
  const char* path = getenv("TCPTUNE_AB_LATENCY_FILE");
  FILE* out = path != NULL ? fopen(path, "a") : NULL;
  for (int i = 0; out != NULL && i < requests; ++i) {
    fprintf(out, "%.6f\n", latencies[i]);
  }
  if (out != NULL) {
    fclose(out);
  }
  free(latencies);
  close(client);
  close(server);
  close(listener);
  return 0;
}
