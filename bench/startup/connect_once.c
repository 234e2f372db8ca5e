/* The program of bench/startup/run.py --program connect: one TCP connection to a loopback
 * listener (the port is the only argument), then exit. Under the shim it loads the core and the
 * policy, which a program that opens no TCP socket never does. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

int main(int argc, char** argv) {
  if (argc != 2) {
    return 2;
  }
  struct sockaddr_in address = {0};
  address.sin_family = AF_INET;
  address.sin_port = htons((unsigned short)atoi(argv[1]));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0 || connect(fd, (const struct sockaddr*)&address, sizeof address) != 0) {
    return 1;
  }
  close(fd);
  return 0;
}
