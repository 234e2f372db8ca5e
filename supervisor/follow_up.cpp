#include "follow_up.hpp"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <optional>

#include "socket_buffers.hpp"

namespace tcptune::supervisor {

namespace {

constexpr std::size_t kCongestionNameMax = 16;  // TCP_CA_NAME_MAX, with its NUL

// The effective values that need no read: an option the applier set as asked, without error,
// that the kernel keeps as given (TCP_NODELAY as 0 or 1; TCP_CONGESTION as the name it found,
// which is the name asked for) is recorded as set. Both buffers come from one read (the kernel
// doubles and caps them). What is left is read by the tuning core, one option at a time.
void fill_effective(int socket, shim::ApplyReport& report) {
  using shim::EffectiveProbe;
  std::optional<std::optional<SocketBuffers>> buffers;  // read once, when a buffer is reported
  for (shim::OptionReport& option : report.options) {
    const EffectiveProbe& probe = option.probe;
    const bool applied = option.status == shim::OptionStatus::applied;
    if (probe.kind == EffectiveProbe::Kind::int_option && probe.level == IPPROTO_TCP && probe.name == TCP_NODELAY &&
        applied && option.name == "nodelay" &&
        (option.requested == "on" || option.requested == "force" || option.requested == "off")) {
      option.effective.assign(1, option.requested == "off" ? '0' : '1');
      option.probe = {};
    } else if (probe.kind == EffectiveProbe::Kind::congestion && applied &&
               option.requested.size() < kCongestionNameMax) {
      option.effective = option.requested;
      option.probe = {};
    } else if (probe.kind == EffectiveProbe::Kind::int_option && probe.level == SOL_SOCKET &&
               (probe.name == SO_SNDBUF || probe.name == SO_RCVBUF)) {
      if (!buffers.has_value()) {
        buffers = read_socket_buffers(socket);
      }
      if (buffers->has_value()) {
        option.effective = std::to_string(probe.name == SO_SNDBUF ? (*buffers)->sndbuf : (*buffers)->rcvbuf);
        option.probe = {};
      }
    }
  }
  shim::read_effective(socket, report);
}

}  // namespace

void read_socket(int socket, FollowUp& follow_up, bool effective_values) {
  if (follow_up.inode == 0) {
    struct stat socket_stat {};
    follow_up.inode = fstat(socket, &socket_stat) == 0 ? socket_stat.st_ino : 0;
  }
  if (follow_up.call != FollowUp::Call::setsockopt && effective_values) {
    fill_effective(socket, follow_up.outcome.report);
  }
}

}  // namespace tcptune::supervisor
