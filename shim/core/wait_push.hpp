// nodelay = "on-wait": Nagle stays on, and what it holds back is pushed out when the thread that
// wrote turns to wait for input. Nagle holds a small segment while an earlier one is
// unacknowledged; a request/response program then waits for a reply the peer cannot send
// before it has the whole request, and the peer's delayed ACK (40 ms on Linux) ends the stall.
// A program that streams small writes never waits between them, so it keeps Nagle's coalescing.
//
// The write path remembers, per thread, which sockets this thread wrote to since its last wait
// (a fixed array in initial-exec TLS: no lock, no allocation, async-signal-safe). The wait
// hooks (read family, poll family, accept) check one thread-local count and, when it is not
// zero, push each remembered socket's held tail: TCP_NODELAY set and cleared, which sends what
// is queued, unless nothing is queued, the socket is corked (a push must never flush a corked
// message), the last write said MSG_MORE, or the app has set TCP_NODELAY itself since.
#pragma once

#include <sys/socket.h>

#include <atomic>
#include <cstdint>

#include "socket_slot.hpp"

namespace tcptune::shim {

struct WrittenSocket {
  int fd = -1;
  std::uint32_t generation = 0;  // the slot's, at the write: a closed and reused number is not pushed
  bool more = false;             // the last write said MSG_MORE: the app's message goes on
};

// Sockets this thread wrote to since it last waited. Past kMaxWritten sockets the ones noted
// are pushed early (as at a wait) to make room.
struct WrittenSinceWait {
  static constexpr std::uint32_t kMaxWritten = 16;
  std::uint32_t count = 0;
  WrittenSocket sockets[kMaxWritten];
};

extern constinit thread_local WrittenSinceWait t_written_since_wait [[gnu::tls_model("initial-exec")]];

// Pushes (and forgets) every socket noted on this thread.
void push_written_sockets() noexcept;

// Write path: `fd`, a socket with flag_push_on_wait, accepted bytes on this thread.
inline void note_written(int fd, const SocketSlot& slot, int flags) noexcept {
  WrittenSinceWait& written = t_written_since_wait;
  const std::uint32_t generation = slot.generation.load(std::memory_order_relaxed);
  const bool more = (flags & MSG_MORE) != 0;
  const std::uint32_t count = written.count;
  for (std::uint32_t i = count; i > 0; --i) {  // the latest first: a stream writes one socket
    WrittenSocket& noted = written.sockets[i - 1];
    if (noted.fd == fd && noted.generation == generation) {
      noted.more = more;
      return;
    }
  }
  if (count == WrittenSinceWait::kMaxWritten) [[unlikely]] {
    push_written_sockets();
  }
  const std::uint32_t index = written.count;
  written.sockets[index] = {fd, generation, more};
  // A signal handler interrupting here sees the entry whole before it is counted.
  std::atomic_signal_fence(std::memory_order_release);
  written.count = index + 1;
}

// Wait hooks, before the real call: one thread-local load when nothing was written.
inline void push_before_wait() noexcept {
  if (t_written_since_wait.count != 0) [[unlikely]] {
    push_written_sockets();
  }
}

}  // namespace tcptune::shim
