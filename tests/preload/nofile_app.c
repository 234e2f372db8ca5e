/* What nofile_limit.py runs at a very low RLIMIT_NOFILE, with and without the shim: it opens TCP
   connections to 127.0.0.1:PORT until the kernel refuses one, writes on each, tries to open a
   file, then says which descriptor numbers below the soft limit are open, and which of the few
   above it (none is the program's: the kernel hands out none there). One line per step on
   stdout: the program's own view, which must be the same with and without the shim. Then it
   closes its connections and exits 0.
   With a second argument `full`, it first holds every free number with files and tries a socket
   (EMFILE), the call that loads the shim's core, then closes the files and goes on as above. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

enum { kMostConnections = 8, kAbove = 8 };

static const char* error_name(int error) {
  switch (error) {
    case EMFILE: return "EMFILE";
    case ENFILE: return "ENFILE";
    default: return strerror(error);
  }
}

static void hold_every_number_and_try_a_socket(void) {
  int files[kMostConnections];
  int held = 0;
  while (held < kMostConnections) {
    const int file = open("/dev/null", O_RDONLY);
    if (file < 0) {
      break;
    }
    files[held++] = file;
  }
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  printf("every number held (%d files): socket %s\n", held, fd >= 0 ? "ok" : error_name(errno));
  if (fd >= 0) {
    close(fd);
  }
  while (held > 0) {
    close(files[--held]);
  }
}

int main(int argc, char** argv) {
  if (argc != 2 && !(argc == 3 && strcmp(argv[2], "full") == 0)) {
    fprintf(stderr, "usage: nofile_app PORT [full]\n");
    return 2;
  }
  setvbuf(stdout, NULL, _IONBF, 0); /* stdio's buffer may not allocate a descriptor, but be sure */
  struct sockaddr_in address;
  memset(&address, 0, sizeof address);
  address.sin_family = AF_INET;
  address.sin_port = htons((unsigned short)atoi(argv[1]));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (argc == 3) {
    hold_every_number_and_try_a_socket();
  }
  int connections[kMostConnections];
  int count = 0;
  while (count < kMostConnections) {
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) {
      printf("socket %s\n", error_name(errno));
      break;
    }
    const int result = connect(fd, (struct sockaddr*)&address, sizeof address);
    printf("socket %d connect %s\n", fd, result == 0 ? "0" : error_name(errno));
    if (result != 0) {
      close(fd);
      break;
    }
    connections[count++] = fd;
  }
  char buffer[100];
  memset(buffer, 'x', sizeof buffer);
  for (int i = 0; i < count; ++i) {
    const ssize_t written = write(connections[i], buffer, sizeof buffer);
    printf("write %d: %s\n", connections[i], written == (ssize_t)sizeof buffer ? "100" : error_name(errno));
  }
  const int file = open("/dev/null", O_RDONLY);
  printf("open %s\n", file >= 0 ? "ok" : error_name(errno));
  struct rlimit limit;
  getrlimit(RLIMIT_NOFILE, &limit);
  printf("open below the limit (%llu):", (unsigned long long)limit.rlim_cur);
  for (int fd = 0; fd < (int)limit.rlim_cur; ++fd) {
    if (fcntl(fd, F_GETFD) >= 0) {
      printf(" %d", fd);
    }
  }
  printf("\nabove:");
  for (int fd = (int)limit.rlim_cur; fd < (int)limit.rlim_cur + kAbove; ++fd) {
    if (fcntl(fd, F_GETFD) >= 0) {
      printf(" %d", fd);
    }
  }
  printf("\n");
  if (file >= 0) {
    close(file);
  }
  for (int i = 0; i < count; ++i) {
    close(connections[i]);
  }
  return 0;
}
