#include "observed_app_settings.hpp"

#include <netinet/in.h>
#include <netinet/ip.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <optional>

#include "socket_buffers.hpp"
#include "socket_probe.hpp"

namespace tcptune::supervisor {

namespace {

bool is_set(int fd, int level, int name) {
  const auto value = shim::get_int_option(fd, level, name);
  return value.has_value() && *value != 0;
}

// The kernel reports twice what SO_SNDBUF/SO_RCVBUF were given; a fresh TCP socket reports
// tcp_wmem[1] / tcp_rmem[1].
std::int32_t held_buffer(std::int32_t value, std::uint64_t fresh) {
  if (value <= 0 || static_cast<std::uint64_t>(value) == fresh) {
    return shim::kNoHeldBuffer;
  }
  return value / 2;
}

}  // namespace

shim::AppSettings observe_app_settings(int fd, const config::Tuning& tuning, int family,
                                       const shim::HostBufferFacts& host, const std::string& host_congestion) {
  shim::AppSettings app;
  app.sees_waits = false;  // the program's reads and polls are not trapped
  const auto mark = [&app, fd](bool asked, shim::AppOption option, int level, int name) {
    if (asked && is_set(fd, level, name)) {
      app.app_options = static_cast<std::uint16_t>(app.app_options | option);
    }
  };
  // Only "off" can tell the program's value from a fresh socket's (0): under "on" the program's
  // 1 is the rule's, "force" overrides it, and "keep" does not touch it.
  const bool nodelay_asked = tuning.nodelay == config::NodelayMode::off;
  mark(nodelay_asked, shim::app_nodelay, IPPROTO_TCP, TCP_NODELAY);
  mark(tuning.keepalive.has_value(), shim::app_keepalive, SOL_SOCKET, SO_KEEPALIVE);
  mark(tuning.user_timeout.has_value(), shim::app_user_timeout, IPPROTO_TCP, TCP_USER_TIMEOUT);
  mark(tuning.notsent_lowat.has_value(), shim::app_notsent_lowat, IPPROTO_TCP, TCP_NOTSENT_LOWAT);
  mark(tuning.thin_linear_timeouts.has_value(), shim::app_thin_linear, IPPROTO_TCP, TCP_THIN_LINEAR_TIMEOUTS);
  const bool ipv6 = family == AF_INET6;
  mark(tuning.tos.has_value(), shim::app_tos, ipv6 ? IPPROTO_IPV6 : IPPROTO_IP, ipv6 ? IPV6_TCLASS : IP_TOS);
  if (tuning.congestion.has_value()) {
    const std::string congestion = shim::get_congestion(fd);
    if (!congestion.empty() && !host_congestion.empty() && congestion != host_congestion) {
      app.app_options = static_cast<std::uint16_t>(app.app_options | shim::app_congestion);
    }
  }
  // Both in one read. Without a buffer rule the program's own value is on the socket already
  // and stays there.
  const std::optional<SocketBuffers> buffers = read_socket_buffers(fd);
  const std::int32_t sndbuf =
      buffers.has_value() ? held_buffer(buffers->sndbuf, host.sndbuf.autotune_default) : shim::kNoHeldBuffer;
  const std::int32_t rcvbuf =
      buffers.has_value() ? held_buffer(buffers->rcvbuf, host.rcvbuf.autotune_default) : shim::kNoHeldBuffer;
  if (tuning.buffers.has_value() || tuning.override_app_buffers.value_or(false)) {
    app.held_sndbuf = sndbuf;
    app.held_rcvbuf = rcvbuf;
  } else {
    // Reported as the app's own, as the shim reports a buffer call it passed on.
    if (sndbuf != shim::kNoHeldBuffer) {
      app.app_options = static_cast<std::uint16_t>(app.app_options | shim::app_sndbuf);
    }
    if (rcvbuf != shim::kNoHeldBuffer) {
      app.app_options = static_cast<std::uint16_t>(app.app_options | shim::app_rcvbuf);
    }
  }
  return app;
}

}  // namespace tcptune::supervisor
