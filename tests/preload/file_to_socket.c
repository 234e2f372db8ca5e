/* Streams a file to a loopback socket in small chunks, read(file, CHUNK) then write(socket), and
 * prints "writes W segments S": the writes made and the data segments the socket sent
 * (TCP_INFO). Reading a regular file is no wait for input: nothing here waits for the peer, so
 * Nagle coalesces the small writes as it does without the shim.
 *
 *   file_to_socket FILE CHUNK
 */
#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/tcp.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

static void* drain(void* arg) {
  const int fd = *(int*)arg;
  char buffer[65536];
  while (read(fd, buffer, sizeof buffer) > 0) {
  }
  return NULL;
}

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: file_to_socket FILE CHUNK\n");
    return 2;
  }
  const size_t chunk = (size_t)atoi(argv[2]);
  char buffer[4096];
  if (chunk == 0 || chunk > sizeof buffer) {
    return 2;
  }
  const int listener = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in address = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t len = sizeof address;
  if (bind(listener, (struct sockaddr*)&address, sizeof address) != 0 || listen(listener, 1) != 0 ||
      getsockname(listener, (struct sockaddr*)&address, &len) != 0) {
    return 2;
  }
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (connect(fd, (struct sockaddr*)&address, sizeof address) != 0) {
    return 2;
  }
  int peer = accept(listener, NULL, NULL);
  pthread_t drainer;
  pthread_create(&drainer, NULL, drain, &peer);
  const int file = open(argv[1], O_RDONLY);
  if (file < 0) {
    return 2;
  }
  long writes = 0;
  ssize_t got;
  while ((got = read(file, buffer, chunk)) > 0) {
    if (write(fd, buffer, (size_t)got) != got) {
      return 2;
    }
    writes++;
  }
  struct tcp_info info;
  socklen_t info_len = sizeof info;
  getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &info_len);
  printf("writes %ld segments %u\n", writes, info.tcpi_data_segs_out);
  shutdown(fd, SHUT_WR);
  pthread_join(drainer, NULL);
  return 0;
}
