// The seccomp filter a supervised program runs under: the calls the supervisor tunes at (connect,
// listen, sendto and sendmsg with MSG_FASTOPEN, which connect too, the setsockopt pairs the
// policy forces, and execve/execveat where no_new_privs is set, to name a setuid program it
// strips; where pidfd_getfd is refused, socket() of a TCP socket, which the supervisor creates
// and hands over, unshare and setns) return SECCOMP_RET_USER_NOTIF, everything else is allowed.
// Built from the policy, so a program pays a trap only where there is work. bind is never
// trapped: a filter sees its descriptor's number, not the socket's kind, so trapping it would
// cost every UDP, unix and netlink bind a round trip (held_sockets.hpp says how a port is
// released instead).
#pragma once

#include <linux/filter.h>

#include <vector>

namespace tcptune::supervisor {

struct TrappedSockopt {
  int level = 0;
  int name = 0;
  friend bool operator==(const TrappedSockopt&, const TrappedSockopt&) = default;
};

struct FilterSpec {
  bool connect = true;
  bool listen = true;
  bool fastopen_sends = true;  // sendto and sendmsg whose flags hold MSG_FASTOPEN
  bool exec = false;           // execve and execveat
  // socket(AF_INET or AF_INET6, SOCK_STREAM with any of SOCK_NONBLOCK and SOCK_CLOEXEC, 0 or
  // IPPROTO_TCP): the TCP sockets the supervisor creates for the program (socket_hand_over.hpp).
  bool tcp_sockets = false;
  bool namespace_changes = false;          // unshare and setns: a thread's network namespace may change
  std::vector<TrappedSockopt> setsockopt;  // each (level, optname) pair to trap
};

// A classic BPF program for seccomp(SECCOMP_SET_MODE_FILTER). A call from another ABI than the
// native one (i386 or x32 on x86_64) is allowed: it is never trapped, so never harmed.
std::vector<sock_filter> build_filter(const FilterSpec& spec);

}  // namespace tcptune::supervisor
