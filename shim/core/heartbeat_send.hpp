// Sending a heartbeat's bytes, and only to the socket keep-warm started on. The app thread
// marks each kept-warm socket with SO_TXTIME (CLOCK_MONOTONIC, no flags); the worker's
// sendmsg carries an SCM_TXTIME control message, which the kernel refuses (EINVAL) on every
// socket without that mark, and send() fails on anything that is not a socket (ENOTSOCK). So a
// descriptor closed behind the hooks (a raw system call) and reused for another file or socket
// never receives a heartbeat, checked by the kernel in the same call that sends, for no system
// call of its own. TCP does not read the send time (only datagram, raw and packet sockets and
// the etf qdisc do), so the mark changes nothing else. Where the kernel has no SO_TXTIME
// (before 4.19) the socket's inode is compared with fstat before each send instead.
#pragma once

#include <cstdint>
#include <string>

namespace tcptune::shim {

// The identity of the socket keep-warm started on, taken on the app's thread while the app
// holds the descriptor.
struct HeartbeatTarget {
  bool marked = false;      // SO_TXTIME set: the kernel checks the identity at each send
  std::uint64_t inode = 0;  // otherwise: compared with fstat's before each send
  std::uint64_t device = 0;
};

// App thread, when keep-warm starts: marks the socket (unless the app set SO_TXTIME itself, which
// marks it as well and is left as it is), or (no SO_TXTIME here) notes its inode.
// False when neither works (the descriptor is not usable): not kept warm.
bool take_heartbeat_target(int fd, HeartbeatTarget& target) noexcept;

// sent: whole; not_sent: nothing went out (a full send buffer), try later; broken: the
// connection failed, or the descriptor no longer names the socket.
enum class SendOutcome : std::uint8_t { sent, not_sent, broken };

// Worker, under the connection's gate: the whole payload or nothing. A heartbeat cut in two
// would corrupt the stream, so a part accepted is finished while the gate holds the app's
// writes back. Preserves errno.
SendOutcome send_heartbeat(int fd, const HeartbeatTarget& target, const std::string& payload) noexcept;

}  // namespace tcptune::shim
