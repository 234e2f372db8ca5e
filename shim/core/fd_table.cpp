#include "fd_table.hpp"

#include <sys/mman.h>

#include <new>

namespace tcptune::shim {

namespace {
void reset(SocketSlot& slot) noexcept {
  // Generation first: a reader holding the old generation sees the change. A heartbeat the
  // worker began before it still finishes before the caller closes the descriptor.
  slot.generation.fetch_add(1, std::memory_order_acq_rel);
  slot.keep_warm_gate.retire();
  slot.framer.clear_loss();  // the rest is set when keep-warm starts on the next connection
  slot.role.store(SocketRole::unknown, std::memory_order_relaxed);
  slot.rule_index.store(kRuleUnchosen, std::memory_order_relaxed);
  slot.flags.store(0, std::memory_order_relaxed);
  slot.app_options.store(0, std::memory_order_relaxed);
  slot.held_sndbuf.store(kNoHeldBuffer, std::memory_order_relaxed);
  slot.held_rcvbuf.store(kNoHeldBuffer, std::memory_order_relaxed);
  slot.kind.store(FdKind::unknown, std::memory_order_release);
}
}  // namespace

SocketSlot* FdTable::find(int fd) noexcept {
  if (fd < 0 || fd > kMaxFd) {
    return nullptr;
  }
  Chunk* chunk = chunks_[static_cast<std::size_t>(fd) >> kChunkBits].load(std::memory_order_acquire);
  if (chunk == nullptr) {
    return nullptr;
  }
  return &chunk->slots[static_cast<std::size_t>(fd) & (kChunkSlots - 1)];
}

SocketSlot* FdTable::get(int fd) noexcept {
  if (SocketSlot* slot = find(fd)) {
    return slot;
  }
  if (fd < 0 || fd > kMaxFd) {
    return nullptr;
  }
  auto& entry = chunks_[static_cast<std::size_t>(fd) >> kChunkBits];
  void* memory = mmap(nullptr, sizeof(Chunk), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (memory == MAP_FAILED) {
    return nullptr;
  }
  Chunk* fresh = new (memory) Chunk();
  Chunk* expected = nullptr;
  if (!entry.compare_exchange_strong(expected, fresh, std::memory_order_acq_rel)) {
    munmap(memory, sizeof(Chunk));  // another thread won; use its chunk
  }
  return find(fd);
}

void FdTable::retire(int fd) noexcept {
  if (SocketSlot* slot = find(fd); slot != nullptr && slot->kind.load(std::memory_order_relaxed) != FdKind::unknown) {
    reset(*slot);
  }
}

void FdTable::retire_range(unsigned int first, unsigned int last) noexcept {
  const auto max_fd = static_cast<unsigned int>(kMaxFd);
  if (first > max_fd) {
    return;
  }
  if (last > max_fd) {
    last = max_fd;
  }
  for (unsigned int fd = first; fd <= last;) {
    const std::size_t chunk_index = fd >> kChunkBits;
    const auto chunk_end = static_cast<unsigned int>(((chunk_index + 1) << kChunkBits) - 1);
    if (chunks_[chunk_index].load(std::memory_order_acquire) == nullptr) {
      if (chunk_end >= last) {
        break;
      }
      fd = chunk_end + 1;  // nothing tracked in this chunk
      continue;
    }
    retire(static_cast<int>(fd));
    if (fd == last) {
      break;
    }
    ++fd;
  }
}

void FdTable::copy(int from, int to) noexcept {
  retire(to);
  SocketSlot* source = find(from);
  if (source == nullptr || source->kind.load(std::memory_order_acquire) == FdKind::unknown) {
    return;  // `to` stays unknown and is classified on first use
  }
  SocketSlot* target = get(to);
  if (target == nullptr) {
    return;
  }
  target->role.store(source->role.load(std::memory_order_relaxed), std::memory_order_relaxed);
  target->rule_index.store(source->rule_index.load(std::memory_order_relaxed), std::memory_order_relaxed);
  // Not a hand-over under way on the source: nothing would end it on the copy.
  target->flags.store(static_cast<std::uint16_t>(source->flags.load(std::memory_order_relaxed) & ~flag_handing_over),
                      std::memory_order_relaxed);
  target->app_options.store(source->app_options.load(std::memory_order_relaxed), std::memory_order_relaxed);
  target->held_sndbuf.store(source->held_sndbuf.load(std::memory_order_relaxed), std::memory_order_relaxed);
  target->held_rcvbuf.store(source->held_rcvbuf.load(std::memory_order_relaxed), std::memory_order_relaxed);
  target->kind.store(source->kind.load(std::memory_order_relaxed), std::memory_order_release);
}

FdTable& fd_table() noexcept {
  // constinit and trivially destructible in effect: no constructor runs, nothing is torn
  // down at exit while other exit handlers may still close sockets.
  static constinit FdTable table;
  return table;
}

}  // namespace tcptune::shim
