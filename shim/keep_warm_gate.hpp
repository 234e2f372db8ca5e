// Keeps the worker's heartbeats and the app's writes on one connection apart, so a heartbeat
// never lands inside an app write, inside a message the app wrote only in part, or on a
// descriptor the app has closed. One atomic word per connection:
//   bits 0..15   app writes in progress on this fd
//   bit 16       a heartbeat is being sent (the worker holds the gate)
//   bit 17       the app's last write was accepted only in part: it is inside a message
//   bits 18..31  write epoch, bumped by every app write, so the worker sees that the app wrote
// The app's side costs two atomic read-modify-writes and never waits, except the few
// microseconds a non-blocking send of a few bytes holds the gate. Async-signal-safe: the worker
// thread blocks every signal, so a handler never interrupts the holder.
#pragma once

#include <sched.h>

#include <atomic>
#include <cstdint>

namespace tcptune::shim {

class KeepWarmGate {
 public:
  static constexpr std::uint32_t kWriterUnit = 1;
  static constexpr std::uint32_t kWritersMask = 0xFFFFU;
  static constexpr std::uint32_t kHeartbeat = 1U << 16;
  static constexpr std::uint32_t kMidMessage = 1U << 17;
  static constexpr std::uint32_t kEpochShift = 18;
  static constexpr std::uint32_t kEpochUnit = 1U << kEpochShift;

  // App thread, before the real write: from here on no heartbeat starts; one already being
  // sent is waited for, so the app's bytes follow it whole.
  void enter_write() noexcept {
    std::uint32_t seen = word_.fetch_add(kWriterUnit, std::memory_order_seq_cst);
    for (int spins = 0; (seen & kHeartbeat) != 0; ++spins) {
      pause(spins);
      seen = word_.load(std::memory_order_acquire);
    }
  }

  // App thread, after the real write: `inside_message` when the call accepted only part of
  // what it was offered (the rest follows in a later write), false when it accepted all.
  // A write that failed (EAGAIN, error) leaves the message state as it was.
  void leave_write(bool accepted_all, bool accepted_part) noexcept {
    // One add: one writer fewer, one epoch more.
    const std::uint32_t before = word_.fetch_add(kEpochUnit - kWriterUnit, std::memory_order_release);
    if (accepted_part && (before & kMidMessage) == 0) {
      word_.fetch_or(kMidMessage, std::memory_order_relaxed);
    } else if (accepted_all && (before & kMidMessage) != 0) {
      word_.fetch_and(~kMidMessage, std::memory_order_relaxed);
    }
  }

  // Worker: takes the gate when no app write is in progress and the app is not inside a
  // message. Release it with end_heartbeat().
  bool try_begin_heartbeat() noexcept {
    std::uint32_t seen = word_.load(std::memory_order_relaxed);
    while ((seen & (kWritersMask | kHeartbeat | kMidMessage)) == 0) {
      if (word_.compare_exchange_weak(seen, seen | kHeartbeat, std::memory_order_seq_cst)) {
        return true;
      }
    }
    return false;
  }
  void end_heartbeat() noexcept { word_.fetch_and(~kHeartbeat, std::memory_order_release); }

  // Closing thread, after the slot's generation was bumped: a heartbeat that began before the
  // bump finishes before the descriptor is closed, so it can never reach a reused number.
  void wait_for_heartbeat() const noexcept {
    for (int spins = 0; (word_.load(std::memory_order_seq_cst) & kHeartbeat) != 0; ++spins) {
      pause(spins);
    }
  }

  [[nodiscard]] std::uint32_t write_epoch() const noexcept {
    return word_.load(std::memory_order_relaxed) >> kEpochShift;
  }
  [[nodiscard]] std::uint32_t raw() const noexcept { return word_.load(std::memory_order_relaxed); }

  // A new connection on this slot starts outside any message. The writer count stays: a write
  // racing a close on another thread still leaves the gate it entered.
  void start_connection() noexcept { word_.fetch_and(~kMidMessage, std::memory_order_relaxed); }

  // In a forked child, whose only thread is the one that forked: no write is in progress and
  // the parent's worker, which may have held the gate, does not exist here.
  void reset_in_child() noexcept { word_.store(0, std::memory_order_relaxed); }

 private:
  static void pause(int spins) noexcept {
    if (spins < 256) {
#if defined(__x86_64__) || defined(__i386__)
      __builtin_ia32_pause();
#elif defined(__aarch64__)
      asm volatile("yield");
#endif
    } else {
      sched_yield();  // the worker was descheduled while holding the gate
    }
  }
  std::atomic<std::uint32_t> word_{0};
};

}  // namespace tcptune::shim
