#include "heartbeat_send.hpp"

#include <linux/net_tstamp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>

#include <cerrno>
#include <cstdint>

#include "errno_saver.hpp"
#include "next_symbols.hpp"
#include "socket_calls.hpp"

namespace tcptune::shim {

namespace {

// How long a heartbeat accepted in part may take to finish (the gate is held meanwhile).
constexpr int kRemainderPolls = 50;
constexpr int kRemainderPollMs = 10;

ssize_t send_part(int fd, const HeartbeatTarget& target, const char* data, std::size_t size) noexcept {
  constexpr int kFlags = MSG_DONTWAIT | MSG_NOSIGNAL;
  if (!target.marked) {
    return next::send(fd, data, size, kFlags);
  }
  iovec part{const_cast<char*>(data), size};
  msghdr message{};
  message.msg_iov = &part;
  message.msg_iovlen = 1;
  // The control message that asks the kernel to check the mark: SCM_TXTIME with a send time of
  // 0 (zeroed here), which TCP does not read.
  alignas(cmsghdr) unsigned char control[CMSG_SPACE(sizeof(std::uint64_t))] = {};
  message.msg_control = control;
  message.msg_controllen = sizeof control;
  cmsghdr* header = CMSG_FIRSTHDR(&message);
  header->cmsg_len = CMSG_LEN(sizeof(std::uint64_t));
  header->cmsg_level = SOL_SOCKET;
  header->cmsg_type = SCM_TXTIME;
  return next::sendmsg(fd, &message, kFlags);
}

bool same_inode(int fd, const HeartbeatTarget& target) noexcept {
  struct stat now {};
  return fstat(fd, &now) == 0 && now.st_ino == target.inode && now.st_dev == target.device;
}

}  // namespace

bool take_heartbeat_target(int fd, HeartbeatTarget& target) noexcept {
  const ErrnoSaver saver;
  // The app's own SO_TXTIME (anything but the kernel's default, which only SO_TXTIME changes)
  // marks the socket already: left as the app set it, not replaced by ours.
  sock_txtime current{};
  socklen_t length = sizeof current;
  if (core_getsockopt(fd, SOL_SOCKET, SO_TXTIME, &current, &length) == 0 && length == sizeof current &&
      (current.clockid != 0 || current.flags != 0)) {
    target = HeartbeatTarget{true, 0, 0};
    return true;
  }
  const sock_txtime mark{CLOCK_MONOTONIC, 0};
  if (core_setsockopt(fd, SOL_SOCKET, SO_TXTIME, &mark, sizeof mark) == 0) {
    target = HeartbeatTarget{true, 0, 0};
    return true;
  }
  struct stat socket_stat {};
  if (fstat(fd, &socket_stat) != 0) {
    return false;
  }
  target = HeartbeatTarget{false, socket_stat.st_ino, socket_stat.st_dev};
  return true;
}

SendOutcome send_heartbeat(int fd, const HeartbeatTarget& target, const std::string& payload) noexcept {
  const ErrnoSaver saver;
  if (!target.marked && !same_inode(fd, target)) {
    return SendOutcome::broken;
  }
  std::size_t sent = 0;
  int polls = 0;
  while (sent < payload.size()) {
    const ssize_t n = send_part(fd, target, payload.data() + sent, payload.size() - sent);
    if (n > 0) {
      sent += static_cast<std::size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) && sent > 0 && polls++ < kRemainderPolls) {
      pollfd writable{fd, POLLOUT, 0};
      next::poll(&writable, 1, kRemainderPollMs);
      continue;
    }
    // EINVAL (a socket without the mark) and ENOTSOCK (not a socket) land here: broken.
    const bool full_buffer = errno == EAGAIN || errno == EWOULDBLOCK;
    return sent == 0 && full_buffer ? SendOutcome::not_sent : SendOutcome::broken;
  }
  return SendOutcome::sent;
}

}  // namespace tcptune::shim
