// SocketSlots indexed by fd number. Two levels: a fixed array of chunk pointers and chunks of
// slots allocated with mmap on first need and installed with a compare-and-swap, so lookups
// and growth take no locks, never call malloc, and are async-signal-safe.
#pragma once

#include <atomic>
#include <cstddef>

#include "socket_slot.hpp"

namespace tcptune::shim {

class FdTable {
 public:
  static constexpr int kChunkBits = 10;
  static constexpr std::size_t kChunkSlots = std::size_t{1} << kChunkBits;
  static constexpr std::size_t kMaxChunks = 4096;  // fds 0 .. 4M-1 are tracked
  static constexpr int kMaxFd = static_cast<int>(kChunkSlots * kMaxChunks) - 1;

  // The slot if its chunk exists; nullptr for fds never seen (they are unknown).
  SocketSlot* find(int fd) noexcept;
  // The slot, creating its chunk if needed; nullptr if fd is out of range or mmap failed.
  SocketSlot* get(int fd) noexcept;

  // Forget everything about fd: its next use classifies it again.
  void retire(int fd) noexcept;
  // Retire every fd in [first, last] whose chunk exists.
  void retire_range(unsigned int first, unsigned int last) noexcept;
  // `to` now names the same open file as `from` (dup family).
  void copy(int from, int to) noexcept;

  // fn(fd, slot) for every slot that exists, whatever its kind.
  template <typename Fn>
  void for_each_slot(Fn&& fn) noexcept {
    for (std::size_t chunk_index = 0; chunk_index < kMaxChunks; ++chunk_index) {
      Chunk* chunk = chunks_[chunk_index].load(std::memory_order_acquire);
      for (std::size_t i = 0; chunk != nullptr && i < kChunkSlots; ++i) {
        fn(static_cast<int>(chunk_index * kChunkSlots + i), chunk->slots[i]);
      }
    }
  }

  // fn(fd, slot) for every slot currently classified as TCP (exit-time summaries).
  template <typename Fn>
  void for_each_tcp(Fn&& fn) noexcept {
    for_each_slot([&](int fd, SocketSlot& slot) {
      if (slot.kind.load(std::memory_order_acquire) == FdKind::tcp) {
        fn(fd, slot);
      }
    });
  }

 private:
  struct Chunk {
    SocketSlot slots[kChunkSlots];
  };
  std::atomic<Chunk*> chunks_[kMaxChunks]{};
};

FdTable& fd_table() noexcept;

}  // namespace tcptune::shim
