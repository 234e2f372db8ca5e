// The TCP sockets the supervisor created and handed over (socket_hand_over.hpp), each held from
// the program's socket() to its connect or listen, where it is tuned as a duplicate would be.
// A held reference keeps the socket alive after the program closes it, and with it a port it
// bound (Go binds and closes a socket to probe for IPv6), so each is dropped as soon as the
// program no longer has it at the descriptor it was given (closed, or moved to another number:
// then it is not tuned): looked at every kSweepEvery, and, for those holding a port, at each
// trapped TCP socket() of a supervised process, before its socket is made. Only a TCP socket's
// bind can find a TCP port taken, and a TCP socket made after the close passes that trap, so
// bind, close, socket, bind finds the port free as without tcptune. bind itself is not trapped
// (the filter cannot tell a TCP socket's bind from a UDP, unix or netlink one's): a TCP socket
// made before the close that binds the port within kSweepEvery after it may find it taken.
// Identity is the socket's inode: a descriptor number the program reuses for another socket
// never finds this one.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "owned_fd.hpp"

namespace tcptune::supervisor {

class HeldSockets {
 public:
  static constexpr std::chrono::milliseconds kSweepEvery{20};
  // Sockets waiting for their connect or listen at once; beyond, they run untuned.
  static constexpr std::size_t kMostHeld = 1024;

  HeldSockets() = default;
  ~HeldSockets();
  HeldSockets(const HeldSockets&) = delete;
  HeldSockets& operator=(const HeldSockets&) = delete;

  // `socket` is at `app_fd` in the table of `thread` (of `process`) now.
  void add(OwnedFd socket, std::uint64_t inode, pid_t thread, pid_t process, int app_fd);
  // The held descriptor of the socket with this inode, -1 if none (inode 0: none).
  [[nodiscard]] int find(std::uint64_t inode) const noexcept;
  // Drops (closes) the one with this inode.
  void release(std::uint64_t inode) noexcept;
  // Drops each one the program no longer has where it was given; sweep_if_due does so at most
  // every kSweepEvery.
  void sweep() noexcept;
  // The same, for those bound to a port only (the others keep nothing another socket needs).
  void sweep_bound() noexcept;
  void sweep_if_due(std::int64_t now_ns) noexcept;
  [[nodiscard]] bool empty() const noexcept { return held_.empty(); }
  [[nodiscard]] std::size_t size() const noexcept { return held_.size(); }

 private:
  struct Held {
    int fd = -1;
    std::uint64_t inode = 0;
    pid_t thread = 0;   // its table first: a thread with a table of its own (unshare(CLONE_FILES))
    pid_t process = 0;  // then the process's, once that thread is gone
    int app_fd = -1;
  };
  template <typename Looked>
  void drop_closed(const Looked& looked_at) noexcept;

  std::vector<Held> held_;
  std::int64_t last_sweep_ns_ = 0;
};

// Closes a socket of the supervisor's without waiting: one the program closed with SO_LINGER
// set, once connected by a call the filter does not see, would make close(2) wait out the
// linger time; such a close is left to a thread of its own.
void close_without_waiting(int fd) noexcept;

}  // namespace tcptune::supervisor
