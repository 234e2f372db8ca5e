/* A plain C program with no C++ runtime: the shim must load into it and tune it. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

int main(void) {
  int listener = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in addr;
  memset(&addr, 0, sizeof addr);
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  if (bind(listener, (struct sockaddr*)&addr, sizeof addr) != 0 || listen(listener, 1) != 0 ||
      getsockname(listener, (struct sockaddr*)&addr, &len) != 0) {
    perror("listen");
    return 2;
  }
  int client = socket(AF_INET, SOCK_STREAM, 0);
  if (connect(client, (struct sockaddr*)&addr, sizeof addr) != 0) {
    perror("connect");
    return 2;
  }
  int nodelay = 0;
  socklen_t optlen = sizeof nodelay;
  getsockopt(client, IPPROTO_TCP, TCP_NODELAY, &nodelay, &optlen);
  printf("plain C client: TCP_NODELAY=%d\n", nodelay);
  close(client);
  close(listener);
  return nodelay == 1 ? 0 : 1;
}
