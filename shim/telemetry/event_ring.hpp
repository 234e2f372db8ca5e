// The bounded queue between the app's threads and the telemetry worker: many producers, one
// consumer. try_push never blocks and never allocates: when the ring is full the event is
// dropped and counted, and the worker reports the count in its next record. A push interrupted
// by a signal handler that pushes too is fine: each claims its own cell; the consumer waits only
// for published cells. A large event can be written in place instead (try_claim, publish).
//
// The consumer only reads cells, and says how far it has read in one counter of its own that
// producers look at only when the ring seems full by the last value they saw. A cache line moves
// between CPUs each time the other side has written it, and that costs an app thread more than
// the rest of a push: a producer reads nothing the consumer writes on its way, and the consumer
// reads what producers wrote.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <type_traits>

namespace tcptune::telemetry {

// An Event with `std::size_t used_bytes() const` (at most its size) is copied in that many bytes.
template <typename Event, std::size_t Capacity>
class EventRing {
  static_assert((Capacity & (Capacity - 1)) == 0, "capacity must be a power of two");
  static_assert(std::is_trivially_copyable_v<Event>);

 public:
  // Zero-initialised, so a ring can be constinit: no constructor runs before the first hook.
  constexpr EventRing() noexcept = default;

  // `counted`: a refused event adds to the dropped count (records; not hints such as an ack
  // sample, whose loss only means one write is not timed).
  bool try_push(const Event& event, bool counted = true) noexcept {
    const std::optional<Claim> claim = try_claim(counted);
    if (!claim.has_value()) {
      return false;
    }
    if constexpr (requires { event.used_bytes(); }) {
      // A union of kinds of events copies what its kind uses: each cache line written is one
      // the consumer's CPU read, and takes a transfer back.
      std::memcpy(static_cast<void*>(claim->event), &event, event.used_bytes());
    } else {
      *claim->event = event;
    }
    publish(*claim);
    return true;
  }

  // A cell the caller fills in place, then publishes: a large event written field by field
  // straight into its cell, rather than built on the stack and copied (the copy's wide loads
  // wait for the narrow stores that just built it: about 400 cycles for a closed connection's
  // 344 bytes, bench/connect_loop). Until it is published the consumer stops at it, and the
  // events after it wait: fill it at once, without waiting on anything.
  struct Claim {
    Event* event;
    std::size_t position;
  };
  std::optional<Claim> try_claim(bool counted = true) noexcept {
    std::size_t position = tail_.load(std::memory_order_relaxed);
    do {
      if (ahead_of(position, head_seen_.load(std::memory_order_acquire)) >= kCapacity &&
          ahead_of(position, refresh_head()) >= kCapacity) {
        if (counted) {
          dropped_.fetch_add(1, std::memory_order_relaxed);
        }
        return std::nullopt;  // full: the consumer has not read this cell's previous event yet
      }
    } while (!tail_.compare_exchange_weak(position, position + 1, std::memory_order_relaxed));
    return Claim{&cells_[position & (Capacity - 1)].event, position};
  }
  void publish(const Claim& claim) noexcept {
    cells_[claim.position & (Capacity - 1)].published.store(claim.position + 1, std::memory_order_release);
  }

  // Producer side: whether at least `events` wait for the consumer. Asks the consumer's counter
  // only when the last value seen says so, so that, while the consumer keeps up, a producer
  // asking at every push reads it once per `events` pushes.
  [[nodiscard]] bool backlog_at_least(std::size_t events) noexcept {
    const std::size_t tail = tail_.load(std::memory_order_relaxed);
    return ahead_of(tail, head_seen_.load(std::memory_order_acquire)) >= static_cast<std::ptrdiff_t>(events) &&
           ahead_of(tail, refresh_head()) >= static_cast<std::ptrdiff_t>(events);
  }

  // Consumer side only (the worker thread).
  bool try_pop(Event& out) noexcept {
    const Cell& cell = cells_[head_ & (Capacity - 1)];
    if (cell.published.load(std::memory_order_acquire) != head_ + 1) {
      return false;  // empty, or the next producer has not published yet
    }
    if constexpr (requires { out.used_bytes(); }) {
      std::memcpy(static_cast<void*>(&out), &cell.event, cell.event.used_bytes());  // the lines it wrote, no more
    } else {
      out = cell.event;
    }
    ++head_;
    read_.store(head_, std::memory_order_release);  // the cell may be written again
    return true;
  }

  // In a fork child (one thread): events the parent had in flight are the parent's to report.
  void reset_in_child() noexcept {
    for (auto& cell : cells_) {
      cell.published.store(0, std::memory_order_relaxed);
    }
    tail_.store(0, std::memory_order_relaxed);
    head_seen_.store(0, std::memory_order_relaxed);
    head_ = 0;
    read_.store(0, std::memory_order_relaxed);
    dropped_.store(0, std::memory_order_relaxed);
  }

  // An event given up after an uncounted try_push: a drop all the same.
  void count_dropped() noexcept { dropped_.fetch_add(1, std::memory_order_relaxed); }

  // Events dropped since the last call (the worker reports them, then they start again).
  std::uint64_t take_dropped() noexcept { return dropped_.exchange(0, std::memory_order_relaxed); }

 private:
  // Signed: a position read before another thread's count may be behind it (its CAS then fails).
  static std::ptrdiff_t ahead_of(std::size_t position, std::size_t read) noexcept {
    return static_cast<std::ptrdiff_t>(position - read);
  }
  static constexpr auto kCapacity = static_cast<std::ptrdiff_t>(Capacity);

  // The consumer's count of events read, for producers; the value they last saw is kept
  // beside the tail. Two producers refreshing it at once may leave the older value: never more
  // than the count, so a push at worst asks again.
  std::size_t refresh_head() noexcept {
    const std::size_t read = read_.load(std::memory_order_acquire);
    head_seen_.store(read, std::memory_order_release);
    return read;
  }

  struct Cell {
    std::atomic<std::size_t> published{0};  // its event's position + 1, once written
    Event event{};
  };
  std::array<Cell, Capacity> cells_{};
  alignas(64) std::atomic<std::size_t> tail_{0};  // producers' line: the next position, and
  std::atomic<std::size_t> head_seen_{0};         // the consumer's count as last seen
  alignas(64) std::size_t head_ = 0;              // consumer's line: its position, and
  std::atomic<std::size_t> read_{0};              // the same, published
  alignas(64) std::atomic<std::uint64_t> dropped_{0};
};

}  // namespace tcptune::telemetry
