// Preallocated packet buffers for the mover: a pool of fixed-size slots reused last-in first-out (so only
// as many pages are touched as the busiest moment needs), and per-direction FIFOs of slot indices (a
// direction's delivery times never decrease, so its packets leave in arrival order).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace tcptune::linkem {

struct PacketSlot {
  static constexpr std::size_t kBytes = 2048;
  static constexpr std::size_t kPayloadBytes = kBytes - 16;  // room for a 1500-byte MTU and then some

  std::int64_t deliver_at_ns;
  std::uint32_t length;
  std::uint32_t unused;
  std::uint8_t data[kPayloadBytes];
};
static_assert(sizeof(PacketSlot) == PacketSlot::kBytes);

class PacketPool {
 public:
  explicit PacketPool(std::uint32_t capacity);
  PacketPool(const PacketPool&) = delete;
  PacketPool& operator=(const PacketPool&) = delete;
  ~PacketPool();

  bool valid() const { return slots_ != nullptr; }
  std::uint32_t capacity() const { return capacity_; }
  bool exhausted() const { return free_.empty(); }
  // The slot the next acquire() hands out: read into it first, and keep it only if the packet is admitted.
  std::uint32_t peek_free() const { return free_.back(); }
  std::uint32_t acquire() {
    const std::uint32_t index = free_.back();
    free_.pop_back();
    return index;
  }
  void release(std::uint32_t index) { free_.push_back(index); }
  PacketSlot& slot(std::uint32_t index) { return slots_[index]; }

 private:
  std::uint32_t capacity_;
  PacketSlot* slots_ = nullptr;
  std::vector<std::uint32_t> free_;  // reserved to capacity up front: push_back never allocates
};

class SlotFifo {
 public:
  explicit SlotFifo(std::uint32_t capacity) : ring_(capacity) {}
  bool empty() const { return size_ == 0; }
  bool full() const { return size_ == ring_.size(); }
  std::size_t size() const { return size_; }
  std::uint32_t front() const { return ring_[head_]; }
  void push(std::uint32_t index) {
    ring_[(head_ + size_) % ring_.size()] = index;
    ++size_;
  }
  void pop() {
    head_ = (head_ + 1) % ring_.size();
    --size_;
  }

 private:
  std::vector<std::uint32_t> ring_;
  std::size_t head_ = 0;
  std::size_t size_ = 0;
};

}  // namespace tcptune::linkem
