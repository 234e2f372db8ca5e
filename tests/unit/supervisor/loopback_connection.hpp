// A loopback listener, a client connected to it and the accepted socket, for the supervisor's
// tests that look the sockets up from outside (sock_diag, the connection watch).
#pragma once

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>

#include "tcptune/config/cidr.hpp"

namespace tcptune::supervisor {

inline std::uint64_t inode_of(int fd) {
  struct stat info {};
  EXPECT_EQ(fstat(fd, &info), 0);
  return info.st_ino;
}

inline std::uint16_t local_port(int fd) {
  sockaddr_storage address{};
  socklen_t length = sizeof address;
  EXPECT_EQ(getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length), 0);
  return config::endpoint_from_sockaddr(reinterpret_cast<const sockaddr*>(&address), length).port;
}

// A listener, a client connected to it and the accepted socket, on the loopback of one family.
struct Loopback {
  int listener = -1;
  int client = -1;
  int accepted = -1;

  // False (nothing open) when the family has no loopback here.
  bool open(int family, const char* listen_address, const char* connect_address) {
    listener = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (listener < 0) {
      return false;
    }
    sockaddr_storage address{};
    socklen_t length = 0;
    if (family == AF_INET) {
      auto* in = reinterpret_cast<sockaddr_in*>(&address);
      in->sin_family = AF_INET;
      inet_pton(AF_INET, listen_address, &in->sin_addr);
      length = sizeof *in;
    } else {
      auto* in6 = reinterpret_cast<sockaddr_in6*>(&address);
      in6->sin6_family = AF_INET6;
      inet_pton(AF_INET6, listen_address, &in6->sin6_addr);
      length = sizeof *in6;
    }
    if (bind(listener, reinterpret_cast<sockaddr*>(&address), length) != 0 || ::listen(listener, 4) != 0) {
      close_all();
      return false;
    }
    const std::uint16_t port = local_port(listener);
    if (family == AF_INET) {
      auto* in = reinterpret_cast<sockaddr_in*>(&address);
      inet_pton(AF_INET, connect_address, &in->sin_addr);
      in->sin_port = htons(port);
    } else {
      auto* in6 = reinterpret_cast<sockaddr_in6*>(&address);
      inet_pton(AF_INET6, connect_address, &in6->sin6_addr);
      in6->sin6_port = htons(port);
    }
    client = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (client < 0 || connect(client, reinterpret_cast<sockaddr*>(&address), length) != 0) {
      close_all();
      return false;
    }
    accepted = accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
    return accepted >= 0;
  }

  void close_all() {
    for (int* fd : {&accepted, &client, &listener}) {
      if (*fd >= 0) {
        close(*fd);
        *fd = -1;
      }
    }
  }
  ~Loopback() { close_all(); }
};

}  // namespace tcptune::supervisor
