// Another preloaded library, listed after libtcptune.so in LD_PRELOAD. Its constructor runs
// before the shim's and already makes a TCP connection (the shim must initialise itself from
// that first hook), and it interposes connect() itself (the shim's next symbol must be this
// one, so the chain keeps working).
#include <arpa/inet.h>
#include <dlfcn.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>
#include <cstdio>
#include <cstring>

namespace {
int connects_seen = 0;
}

extern "C" __attribute__((visibility("default"))) int connect(int fd, const sockaddr* addr, socklen_t len) {
  using ConnectFn = int(int, const sockaddr*, socklen_t);
  static ConnectFn* next_connect = nullptr;
  if (next_connect == nullptr) {
    next_connect = reinterpret_cast<ConnectFn*>(dlsym(RTLD_NEXT, "connect"));
  }
  ++connects_seen;
  return next_connect(fd, addr, len);
}

__attribute__((constructor)) static void connect_early() {
  int listener = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  listen(listener, 1);
  getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len);
  int client = socket(AF_INET, SOCK_STREAM, 0);
  // Through the global scope, as any other library's call would go (a compiler may bind a
  // call to this file's own connect() directly).
  using ConnectFn = int(int, const sockaddr*, socklen_t);
  auto* global_connect = reinterpret_cast<ConnectFn*>(dlsym(RTLD_DEFAULT, "connect"));
  global_connect(client, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  int nodelay = -1;
  socklen_t optlen = sizeof nodelay;
  getsockopt(client, IPPROTO_TCP, TCP_NODELAY, &nodelay, &optlen);
  std::printf("early constructor: TCP_NODELAY=%d\n", nodelay);
  close(client);
  close(listener);
}

__attribute__((destructor)) static void report() {
  std::printf("chained connect() calls seen: %d\n", connects_seen);
}
