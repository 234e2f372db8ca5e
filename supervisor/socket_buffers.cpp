#include "socket_buffers.hpp"

#include <linux/sock_diag.h>
#include <sys/socket.h>

#include <array>

#include "socket_probe.hpp"

namespace tcptune::supervisor {

std::optional<SocketBuffers> read_socket_buffers(int fd) noexcept {
  std::array<std::uint32_t, SK_MEMINFO_VARS> meminfo{};
  socklen_t length = sizeof meminfo;
  // SK_MEMINFO_SNDBUF and SK_MEMINFO_RCVBUF are sk_sndbuf and sk_rcvbuf, which SO_SNDBUF and
  // SO_RCVBUF report.
  if (getsockopt(fd, SOL_SOCKET, SO_MEMINFO, meminfo.data(), &length) == 0 &&
      length > SK_MEMINFO_SNDBUF * sizeof(std::uint32_t)) {
    return SocketBuffers{static_cast<std::int32_t>(meminfo[SK_MEMINFO_SNDBUF]),
                         static_cast<std::int32_t>(meminfo[SK_MEMINFO_RCVBUF])};
  }
  const std::optional<int> sndbuf = shim::get_int_option(fd, SOL_SOCKET, SO_SNDBUF);
  const std::optional<int> rcvbuf = shim::get_int_option(fd, SOL_SOCKET, SO_RCVBUF);
  if (!sndbuf.has_value() || !rcvbuf.has_value()) {
    return std::nullopt;
  }
  return SocketBuffers{*sndbuf, *rcvbuf};
}

}  // namespace tcptune::supervisor
