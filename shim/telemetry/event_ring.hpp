// The bounded queue between the app's threads and the telemetry worker: many producers, one
// consumer (D. Vyukov's bounded queue, with one sequence number per cell). try_push never
// blocks and never allocates: when the ring is full the event is dropped and counted, and the
// worker reports the count in its next record. A push interrupted by a signal handler that
// pushes too is fine: each claims its own cell; the consumer waits only for published cells.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace tcptune::telemetry {

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
    std::size_t position = tail_.load(std::memory_order_relaxed);
    for (;;) {
      const std::size_t index = position & (Capacity - 1);
      Cell& cell = cells_[index];
      const std::size_t sequence = cell.sequence_from_index.load(std::memory_order_acquire) + index;
      const auto lag = static_cast<std::ptrdiff_t>(sequence) - static_cast<std::ptrdiff_t>(position);
      if (lag == 0) {
        if (tail_.compare_exchange_weak(position, position + 1, std::memory_order_relaxed)) {
          cell.event = event;
          cell.sequence_from_index.store(position + 1 - index, std::memory_order_release);
          return true;
        }
      } else if (lag < 0) {
        if (counted) {
          dropped_.fetch_add(1, std::memory_order_relaxed);
        }
        return false;  // full: the consumer has not freed this cell yet
      } else {
        position = tail_.load(std::memory_order_relaxed);
      }
    }
  }

  // Consumer side only (the worker thread).
  bool try_pop(Event& out) noexcept {
    const std::size_t index = head_ & (Capacity - 1);
    Cell& cell = cells_[index];
    const std::size_t sequence = cell.sequence_from_index.load(std::memory_order_acquire) + index;
    if (sequence != head_ + 1) {
      return false;  // empty, or the next producer has not published yet
    }
    out = cell.event;
    cell.sequence_from_index.store(head_ + Capacity - index, std::memory_order_release);
    ++head_;
    return true;
  }

  // In a fork child (one thread): events the parent had in flight are the parent's to report.
  void reset_in_child() noexcept {
    for (auto& cell : cells_) {
      cell.sequence_from_index.store(0, std::memory_order_relaxed);
    }
    tail_.store(0, std::memory_order_relaxed);
    head_ = 0;
    dropped_.store(0, std::memory_order_relaxed);
  }

  // An event given up after an uncounted try_push: a drop all the same.
  void count_dropped() noexcept { dropped_.fetch_add(1, std::memory_order_relaxed); }

  // Events dropped since the last call (the worker reports them, then they start again).
  std::uint64_t take_dropped() noexcept { return dropped_.exchange(0, std::memory_order_relaxed); }

 private:
  // Each cell's sequence number minus its index: the classic algorithm starts cell i at i,
  // this form starts every cell at zero.
  struct Cell {
    std::atomic<std::size_t> sequence_from_index{0};
    Event event{};
  };
  std::array<Cell, Capacity> cells_{};
  alignas(64) std::atomic<std::size_t> tail_{0};
  alignas(64) std::size_t head_ = 0;
  alignas(64) std::atomic<std::uint64_t> dropped_{0};
};

}  // namespace tcptune::telemetry
