#include "observed_app_settings.hpp"

#include <netinet/in.h>
#include <netinet/ip.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include "socket_probe.hpp"

namespace tcptune::supervisor {

namespace {

bool is_set(int fd, int level, int name) {
  const auto value = shim::get_int_option(fd, level, name);
  return value.has_value() && *value != 0;
}

// The kernel reports twice what SO_SNDBUF/SO_RCVBUF were given; a fresh TCP socket reports
// tcp_wmem[1] / tcp_rmem[1].
std::int32_t held_buffer(int fd, int name, std::uint64_t fresh) {
  const auto value = shim::get_int_option(fd, SOL_SOCKET, name);
  if (!value.has_value() || *value <= 0 || static_cast<std::uint64_t>(*value) == fresh) {
    return shim::kNoHeldBuffer;
  }
  return *value / 2;
}

}  // namespace

shim::AppSettings observe_app_settings(int fd, const shim::HostBufferFacts& host, const std::string& host_congestion) {
  shim::AppSettings app;
  const auto mark = [&app](bool set, shim::AppOption option) {
    if (set) {
      app.app_options = static_cast<std::uint16_t>(app.app_options | option);
    }
  };
  mark(is_set(fd, IPPROTO_TCP, TCP_NODELAY), shim::app_nodelay);
  mark(is_set(fd, SOL_SOCKET, SO_KEEPALIVE), shim::app_keepalive);
  mark(is_set(fd, IPPROTO_TCP, TCP_USER_TIMEOUT), shim::app_user_timeout);
  mark(is_set(fd, IPPROTO_TCP, TCP_THIN_LINEAR_TIMEOUTS), shim::app_thin_linear);
  const bool ipv6 = shim::socket_family(fd) == AF_INET6;
  mark(is_set(fd, ipv6 ? IPPROTO_IPV6 : IPPROTO_IP, ipv6 ? IPV6_TCLASS : IP_TOS), shim::app_tos);
  const std::string congestion = shim::get_congestion(fd);
  mark(!congestion.empty() && !host_congestion.empty() && congestion != host_congestion, shim::app_congestion);
  app.held_sndbuf = held_buffer(fd, SO_SNDBUF, host.sndbuf.autotune_default);
  app.held_rcvbuf = held_buffer(fd, SO_RCVBUF, host.rcvbuf.autotune_default);
  return app;
}

}  // namespace tcptune::supervisor
