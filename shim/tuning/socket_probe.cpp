#include "socket_probe.hpp"

#include <netinet/in.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>

#include "errno_saver.hpp"
#include "socket_calls.hpp"

namespace tcptune::shim {

namespace {
using NameFn = int(int, sockaddr*, socklen_t*);
config::Endpoint endpoint_of(int fd, NameFn* name_fn, int* family = nullptr) {
  ErrnoSaver saver;
  sockaddr_storage storage{};
  socklen_t len = sizeof storage;
  const bool named = name_fn(fd, reinterpret_cast<sockaddr*>(&storage), &len) == 0;
  if (family != nullptr) {
    *family = named ? storage.ss_family : 0;
  }
  return named ? config::endpoint_from_sockaddr(reinterpret_cast<const sockaddr*>(&storage), len) : config::Endpoint{};
}
}  // namespace

std::optional<int> get_int_option(int fd, int level, int name) noexcept {
  ErrnoSaver saver;
  int value = 0;
  socklen_t len = sizeof value;
  if (core_getsockopt(fd, level, name, &value, &len) != 0 || len != sizeof value) {
    return std::nullopt;
  }
  return value;
}

FdKind classify_fd(int fd) noexcept {
  ErrnoSaver saver;
  int value = 0;
  socklen_t len = sizeof value;
  if (core_getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &value, &len) != 0) {
    return errno == EBADF ? FdKind::unknown : FdKind::other;
  }
  if (value != AF_INET && value != AF_INET6) {
    return FdKind::other;
  }
  const auto type = get_int_option(fd, SOL_SOCKET, SO_TYPE);
  const auto protocol = get_int_option(fd, SOL_SOCKET, SO_PROTOCOL);
  if (type != SOCK_STREAM || (protocol.has_value() && *protocol != IPPROTO_TCP)) {
    return FdKind::other;  // SCTP and MPTCP streams are not TCP for our purposes
  }
  return FdKind::tcp;
}

bool is_listening(int fd) noexcept {
  return get_int_option(fd, SOL_SOCKET, SO_ACCEPTCONN).value_or(0) != 0;
}

bool is_connected(int fd) noexcept {
  ErrnoSaver saver;
  sockaddr_storage storage{};
  socklen_t len = sizeof storage;
  return getpeername(fd, reinterpret_cast<sockaddr*>(&storage), &len) == 0;
}

int socket_family(int fd) noexcept {
  return get_int_option(fd, SOL_SOCKET, SO_DOMAIN).value_or(-1);
}

config::Endpoint local_endpoint(int fd) {
  return endpoint_of(fd, getsockname);
}
config::Endpoint local_endpoint(int fd, int& family) {
  return endpoint_of(fd, getsockname, &family);
}
config::Endpoint peer_endpoint(int fd) {
  return endpoint_of(fd, getpeername);
}

std::optional<tcp_info> get_tcp_info(int fd) noexcept {
  ErrnoSaver saver;
  tcp_info info{};
  socklen_t len = sizeof info;
  if (core_getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &len) != 0) {
    return std::nullopt;
  }
  // Older kernels fill a prefix: zero what they did not write.
  if (len < sizeof info) {
    std::memset(reinterpret_cast<char*>(&info) + len, 0, sizeof info - len);
  }
  return info;
}

std::string get_congestion(int fd) {
  constexpr socklen_t kCongestionNameMax = 16;  // TCP_CA_NAME_MAX in the kernel
  ErrnoSaver saver;
  char name[kCongestionNameMax + 1] = {};
  socklen_t len = kCongestionNameMax;
  if (core_getsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, name, &len) != 0) {
    return {};
  }
  return std::string(name, strnlen(name, len));
}

}  // namespace tcptune::shim
