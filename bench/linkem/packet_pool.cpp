#include "packet_pool.hpp"

#include <sys/mman.h>

namespace tcptune::linkem {

PacketPool::PacketPool(std::uint32_t capacity) : capacity_(capacity) {
  // Anonymous and unreserved: pages cost memory only once a packet has been stored in them.
  void* memory = mmap(nullptr, std::size_t{capacity} * sizeof(PacketSlot), PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (memory == MAP_FAILED) {
    return;
  }
  slots_ = static_cast<PacketSlot*>(memory);
  free_.reserve(capacity);
  // Lowest indices on top, so that a light load keeps reusing the same few pages.
  for (std::uint32_t i = capacity; i > 0; --i) {
    free_.push_back(i - 1);
  }
}

PacketPool::~PacketPool() {
  if (slots_ != nullptr) {
    munmap(slots_, std::size_t{capacity_} * sizeof(PacketSlot));
  }
}

}  // namespace tcptune::linkem
