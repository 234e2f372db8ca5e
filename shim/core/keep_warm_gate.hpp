// Keeps the worker's heartbeats and the app's writes on one connection apart, so a heartbeat
// never lands inside an app write, inside a message the app has not finished (written in part,
// sent with MSG_MORE, or under TCP_CORK), or on a descriptor being closed. One atomic word:
//   bits 0..13   app writes in progress on this fd
//   bit 14       a heartbeat is being sent (the worker holds the gate)
//   bit 15       inside a message: the framer says so (a protocol preset), or, with raw bytes,
//                the app's last write was accepted in part or said MSG_MORE
//   bit 16       stopped: the fd is closing or shared, no heartbeat starts (until the slot
//                holds a new connection)
//   bit 17       the app set TCP_CORK
//   bit 18       Nagle is on (TCP_NODELAY off), as the app or the rule left it
//   bit 19       a heartbeat went out since the app last finished a message
//   bits 20..31  write epoch, bumped by every app write, so the worker sees that the app wrote
// An app write costs two atomic read-modify-writes and waits only while a heartbeat's
// non-blocking send() of a few bytes holds the gate (futex after a short spin). Async-signal-
// safe: the worker thread blocks every signal, so a handler never interrupts the holder.
//
// Nagle: Linux holds a sub-MSS segment while an earlier small one is unacknowledged
// (tcp_minshall_check), and a heartbeat is one. With Nagle on, the tail of the first message
// after a heartbeat would wait for the heartbeat's ACK: up to a round trip plus the peer's
// delayed ACK. So the write (or uncork) that finishes that message reports `push_due`, and the
// caller pushes the tail out (TCP_NODELAY set and cleared), as if no heartbeat had been sent.
#pragma once

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <climits>
#include <cstdint>

namespace tcptune::shim {

class KeepWarmGate {
 public:
  static constexpr std::uint32_t kWritersMask = 0x3FFFU;
  static constexpr std::uint32_t kHeartbeat = 1U << 14;
  static constexpr std::uint32_t kMidMessage = 1U << 15;
  static constexpr std::uint32_t kStopped = 1U << 16;
  static constexpr std::uint32_t kCorked = 1U << 17;
  static constexpr std::uint32_t kNagle = 1U << 18;
  static constexpr std::uint32_t kHeartbeatUnpushed = 1U << 19;
  static constexpr std::uint32_t kEpochShift = 20;
  static constexpr std::uint32_t kEpochUnit = 1U << kEpochShift;

  // App thread, before the real write: from here on no heartbeat starts; one already being
  // sent is waited for, so the app's bytes follow it whole. False when another write was in
  // progress (another thread, or a signal handler's write inside one): the order of the two
  // calls' bytes on the stream is then unknown.
  bool enter_write() noexcept {
    const std::uint32_t seen = word_.fetch_add(1, std::memory_order_seq_cst);
    if ((seen & kHeartbeat) != 0) [[unlikely]] {
      wait_while_heartbeat();
    }
    return (seen & kWritersMask) == 0;
  }

  // App thread, after the real write, in one atomic step: one writer fewer, one epoch more,
  // and the message state: inside a message when the call accepted only part of what it was
  // offered or said MSG_MORE (`accepted_part`), outside when it accepted all; a call that
  // failed (EAGAIN, error) leaves it as it was. True when the write finished the first
  // message after a heartbeat on an uncorked Nagle socket: the caller pushes its tail. A
  // write of no bytes (a zero-length send ending a MSG_MORE chain) pushes too but does not
  // use the push up: the heartbeat may still be unacknowledged when the next message comes.
  bool leave_write(bool accepted_all, bool accepted_part, bool wrote_bytes = true) noexcept {
    std::uint32_t seen = word_.load(std::memory_order_relaxed);
    std::uint32_t next = 0;
    bool push_due = false;
    do {
      next = seen + kEpochUnit;
      if ((seen & kWritersMask) != 0) {  // zero only in a child forked inside this write
        next -= 1;
      }
      push_due = false;
      if (accepted_part) {
        next |= kMidMessage;
      } else if (accepted_all) {
        next &= ~kMidMessage;
        push_due = tail_push_due(next);
        if (push_due && wrote_bytes) {
          next &= ~kHeartbeatUnpushed;
        }
      }
    } while (!word_.compare_exchange_weak(seen, next, std::memory_order_release, std::memory_order_relaxed));
    return push_due;
  }

  // App thread: TCP_CORK set or cleared. Corked writes are a message still being assembled.
  // True when clearing it may end a message after a heartbeat on a Nagle socket: the
  // kernel's uncork sends only what Nagle lets through, so the caller pushes the tail. The
  // push is not used up (an uncork may have had nothing queued); the next write's is.
  bool set_corked(bool corked) noexcept {
    if (corked) {
      word_.fetch_or(kCorked, std::memory_order_release);
      return false;
    }
    const std::uint32_t seen = word_.fetch_and(~kCorked, std::memory_order_release);
    return (seen & kCorked) != 0 && tail_push_due(seen & ~kCorked);
  }

  // App thread (its TCP_NODELAY, passed to the kernel) or the rule's start: Nagle on or off.
  void set_nagle(bool on) noexcept {
    if (on) {
      word_.fetch_or(kNagle, std::memory_order_relaxed);
    } else {
      word_.fetch_and(~kNagle, std::memory_order_relaxed);
    }
  }
  [[nodiscard]] bool nagle() const noexcept { return (word_.load(std::memory_order_relaxed) & kNagle) != 0; }

  // Worker: takes the gate when no app write is in progress, the app is not inside a message
  // and the descriptor is not being closed. Release it with end_heartbeat().
  bool try_begin_heartbeat() noexcept {
    std::uint32_t seen = word_.load(std::memory_order_relaxed);
    while ((seen & (kWritersMask | kHeartbeat | kMidMessage | kStopped | kCorked)) == 0) {
      if (word_.compare_exchange_weak(seen, seen | kHeartbeat, std::memory_order_seq_cst)) {
        return true;
      }
    }
    return false;
  }
  // `sent`: the heartbeat went out, so the next message's tail may be held behind it.
  void end_heartbeat(bool sent = false) noexcept {
    if (sent) {
      word_.fetch_or(kHeartbeatUnpushed, std::memory_order_relaxed);
    }
    if ((word_.fetch_and(~kHeartbeat, std::memory_order_release) & (kWritersMask | kStopped)) != 0) {
      futex(FUTEX_WAKE_PRIVATE, INT_MAX);  // writers or a closer arrived meanwhile and may sleep
    }
  }

  // Before the fd is closed (its summary is taken first) or shared (dup, fork): no heartbeat
  // starts from now on, and one in progress finishes first, so it is counted and can never
  // reach a reused descriptor number or interleave with writes through another descriptor.
  void stop_heartbeats() noexcept {
    if ((word_.fetch_or(kStopped, std::memory_order_seq_cst) & kHeartbeat) != 0) {
      wait_while_heartbeat();
    }
  }

  [[nodiscard]] std::uint32_t write_epoch() const noexcept {
    return word_.load(std::memory_order_relaxed) >> kEpochShift;
  }
  [[nodiscard]] std::uint32_t raw() const noexcept { return word_.load(std::memory_order_relaxed); }

  // The slot's descriptor is closed (retired): no heartbeat, and no message or cork state
  // left for the next connection on this number. The writer count stays: a write racing a
  // close on another thread still leaves the gate it entered.
  void retire() noexcept {
    stop_heartbeats();
    word_.fetch_and(~(kMidMessage | kCorked | kNagle | kHeartbeatUnpushed), std::memory_order_relaxed);
  }

  // Heartbeats may start on this connection. The message state stays: the app may have
  // corked the socket, or written part of a message, before its rule was applied.
  // `inside_message`: the framer says the stream is not between two messages yet (nothing
  // written on a protocol whose first bytes are not a heartbeat's place, or a line the shim
  // joined in its middle).
  void start_connection(bool inside_message) noexcept {
    if (inside_message) {
      word_.fetch_or(kMidMessage, std::memory_order_relaxed);
    }
    word_.fetch_and(~kStopped, std::memory_order_release);
  }

  // In a forked child, whose only thread is the one that forked: the parent's worker, which
  // may have held the gate, does not exist here. Connections inherited stay stopped.
  void reset_in_child() noexcept { word_.store(kStopped, std::memory_order_relaxed); }

 private:
  // Outside a message, uncorked, Nagle on and a heartbeat sent since the last message.
  static bool tail_push_due(std::uint32_t word) noexcept {
    return (word & (kMidMessage | kCorked | kNagle | kHeartbeatUnpushed)) == (kNagle | kHeartbeatUnpushed);
  }

  void wait_while_heartbeat() noexcept {
    for (int spins = 0;; ++spins) {
      const std::uint32_t seen = word_.load(std::memory_order_seq_cst);
      if ((seen & kHeartbeat) == 0) {
        return;
      }
      if (spins < 128) {
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#elif defined(__aarch64__)
        asm volatile("yield");
#endif
      } else {
        futex(FUTEX_WAIT_PRIVATE, static_cast<int>(seen));  // the worker was descheduled
      }
    }
  }
  void futex(int op, int value) noexcept {
    const int saved_errno = errno;  // the app's write path must see only the real call's errno
    syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&word_), op, value, nullptr, nullptr, 0);
    errno = saved_errno;
  }

  std::atomic<std::uint32_t> word_{0};
};

}  // namespace tcptune::shim
