// A socket's two buffer sizes in one system call (SO_MEMINFO, Linux 4.6): the values SO_SNDBUF
// and SO_RCVBUF report (the kernel's, twice what setsockopt was given), read while a trapped call
// waits, where every system call counts.
#pragma once

#include <cstdint>
#include <optional>

namespace tcptune::supervisor {

struct SocketBuffers {
  std::int32_t sndbuf = 0;
  std::int32_t rcvbuf = 0;
};

// nullopt if neither SO_MEMINFO nor SO_SNDBUF and SO_RCVBUF can be read.
std::optional<SocketBuffers> read_socket_buffers(int fd) noexcept;

}  // namespace tcptune::supervisor
