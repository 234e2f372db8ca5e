#include "connection_names.hpp"

#include <cstring>
#include <new>

#include "socket_slot.hpp"

namespace tcptune::shim {

namespace {

// A sequence lock over atomic words: a reader that saw part of a store sees the generation
// change and takes nothing.
void pack(const config::Endpoint& endpoint, std::atomic<std::uint64_t> (&words)[3]) noexcept {
  std::uint64_t address[2] = {};
  std::memcpy(address, endpoint.bytes.data(), sizeof address);
  words[0].store(address[0], std::memory_order_relaxed);
  words[1].store(address[1], std::memory_order_relaxed);
  words[2].store(static_cast<std::uint64_t>(endpoint.family) | (std::uint64_t{endpoint.port} << 8U),
                 std::memory_order_relaxed);
}

config::Endpoint unpack(const std::atomic<std::uint64_t> (&words)[3]) noexcept {
  const std::uint64_t address[2] = {words[0].load(std::memory_order_relaxed), words[1].load(std::memory_order_relaxed)};
  const std::uint64_t rest = words[2].load(std::memory_order_relaxed);
  config::Endpoint endpoint;
  std::memcpy(endpoint.bytes.data(), address, sizeof address);
  endpoint.family = static_cast<int>(rest & 0xffU);
  endpoint.port = static_cast<std::uint16_t>(rest >> 8U);
  return endpoint;
}

}  // namespace

void ConnectionNames::store(std::uint32_t generation, const config::Endpoint& local,
                            const config::Endpoint& peer) noexcept {
  std::uint32_t current = generation_.load(std::memory_order_acquire);
  if (current == generation || current == kWriting ||
      !generation_.compare_exchange_strong(current, kWriting, std::memory_order_acq_rel)) {
    return;  // stored already, or another store is under way: the first one's values stand
  }
  std::atomic_thread_fence(std::memory_order_release);
  pack(local, local_);
  pack(peer, peer_);
  generation_.store(generation, std::memory_order_release);
}

bool ConnectionNames::load(std::uint32_t generation, config::Endpoint& local, config::Endpoint& peer) const noexcept {
  if (generation_.load(std::memory_order_acquire) != generation) {
    return false;
  }
  const config::Endpoint read_local = unpack(local_);
  const config::Endpoint read_peer = unpack(peer_);
  std::atomic_thread_fence(std::memory_order_acquire);
  if (generation_.load(std::memory_order_relaxed) != generation) {
    return false;
  }
  local = read_local;
  peer = read_peer;
  return true;
}

ConnectionNames* names_for(SocketSlot& slot) noexcept {
  if (ConnectionNames* names = slot.names.load(std::memory_order_acquire)) {
    return names;
  }
  auto* fresh = new (std::nothrow) ConnectionNames;
  if (fresh == nullptr) {
    return nullptr;
  }
  ConnectionNames* expected = nullptr;
  if (!slot.names.compare_exchange_strong(expected, fresh, std::memory_order_acq_rel)) {
    delete fresh;  // another thread installed one first
    return expected;
  }
  return fresh;
}

ConnectionNames* names_if_any(const SocketSlot& slot) noexcept {
  return slot.names.load(std::memory_order_acquire);
}

}  // namespace tcptune::shim
