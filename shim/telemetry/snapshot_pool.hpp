// A fixed set of preallocated objects handed between the app's threads and the worker with no
// lock and no allocation: acquire() on any thread (async-signal-safe), release() when done.
// Zero-initialised (constinit-friendly): never-used entries are taken in order, returned ones
// go on a free list whose head carries a tag against the ABA problem.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>

namespace tcptune::telemetry {

template <typename T, std::uint32_t Capacity>
class SnapshotPool {
 public:
  constexpr SnapshotPool() noexcept = default;

  T* acquire() noexcept {
    std::uint64_t head = free_head_.load(std::memory_order_acquire);
    while (index_of(head) != kNone) {
      const std::uint32_t index = index_of(head);
      const std::uint64_t next = pack(next_[index].load(std::memory_order_relaxed), tag_of(head) + 1);
      if (free_head_.compare_exchange_weak(head, next, std::memory_order_acq_rel)) {
        return &items_[index];
      }
    }
    const std::uint32_t fresh = never_used_.fetch_add(1, std::memory_order_relaxed);
    if (fresh < Capacity) {
      return &items_[fresh];
    }
    never_used_.store(Capacity, std::memory_order_relaxed);  // keep it from wrapping
    return nullptr;
  }

  void release(T* item) noexcept {
    const auto index = static_cast<std::uint32_t>(item - items_.data());
    std::uint64_t head = free_head_.load(std::memory_order_acquire);
    do {
      next_[index].store(index_of(head), std::memory_order_relaxed);
    } while (!free_head_.compare_exchange_weak(head, pack(index, tag_of(head) + 1), std::memory_order_acq_rel));
  }

  // Whether `item` is one of this pool's (else it came from elsewhere, say the heap).
  [[nodiscard]] bool holds(const T* item) const noexcept {
    return item >= items_.data() && item < items_.data() + Capacity;
  }

  // In a fork child (one thread): everything in flight in the parent is forgotten.
  void reset_in_child() noexcept {
    free_head_.store(pack(kNone, 0), std::memory_order_relaxed);
    never_used_.store(0, std::memory_order_relaxed);
  }

 private:
  // The free list stores index + 1, so that zero means empty.
  static constexpr std::uint32_t kNone = 0xFFFFFFFF;
  static constexpr std::uint64_t pack(std::uint32_t index, std::uint32_t tag) {
    return (std::uint64_t{tag} << 32) | static_cast<std::uint32_t>(index + 1);
  }
  static constexpr std::uint32_t index_of(std::uint64_t packed) {
    return static_cast<std::uint32_t>(packed) - 1;  // 0 (empty) becomes kNone
  }
  static constexpr std::uint32_t tag_of(std::uint64_t packed) { return static_cast<std::uint32_t>(packed >> 32); }

  std::array<T, Capacity> items_{};
  std::array<std::atomic<std::uint32_t>, Capacity> next_{};
  std::atomic<std::uint64_t> free_head_{0};
  std::atomic<std::uint32_t> never_used_{0};
};

}  // namespace tcptune::telemetry
