// Questions asked of the kernel about a socket, through the socket_calls seam (in the shim, the
// next getsockopt, so that other interposers see them). All preserve errno.
#pragma once

#include <netinet/tcp.h>

#include <cstdint>
#include <optional>
#include <string>

#include "tcptune/config/cidr.hpp"

namespace tcptune::shim {

enum class FdKind : std::uint8_t {
  unknown,  // not seen yet, or retired: classified on next use
  other,    // file, pipe, UDP, unix socket, ...: one lookup per call, nothing else
  tcp,      // AF_INET/AF_INET6 stream socket
};

// AF_INET/AF_INET6 stream TCP socket (any state), another kind of fd, or not an fd at all
// (EBADF: stays unknown).
FdKind classify_fd(int fd) noexcept;
bool is_listening(int fd) noexcept;
bool is_connected(int fd) noexcept;  // has a peer
int socket_family(int fd) noexcept;  // AF_INET, AF_INET6, or -1

config::Endpoint local_endpoint(int fd);
// The same, and the socket's own family in `family` (AF_INET6 for a v4-mapped endpoint, which the
// endpoint does not keep); 0 when the kernel does not say.
config::Endpoint local_endpoint(int fd, int& family);
config::Endpoint peer_endpoint(int fd);

std::optional<int> get_int_option(int fd, int level, int name) noexcept;
std::optional<tcp_info> get_tcp_info(int fd) noexcept;
std::string get_congestion(int fd);

}  // namespace tcptune::shim
