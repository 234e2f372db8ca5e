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
  // Without a buffer rule the program's own value is on the socket already and stays there.
  if (tuning.buffers.has_value() || tuning.override_app_buffers.value_or(false)) {
    app.held_sndbuf = held_buffer(fd, SO_SNDBUF, host.sndbuf.autotune_default);
    app.held_rcvbuf = held_buffer(fd, SO_RCVBUF, host.rcvbuf.autotune_default);
  } else {
    // Reported as the app's own, as the shim reports a buffer call it passed on.
    if (held_buffer(fd, SO_SNDBUF, host.sndbuf.autotune_default) != shim::kNoHeldBuffer) {
      app.app_options = static_cast<std::uint16_t>(app.app_options | shim::app_sndbuf);
    }
    if (held_buffer(fd, SO_RCVBUF, host.rcvbuf.autotune_default) != shim::kNoHeldBuffer) {
      app.app_options = static_cast<std::uint16_t>(app.app_options | shim::app_rcvbuf);
    }
  }
  return app;
}

}  // namespace tcptune::supervisor
