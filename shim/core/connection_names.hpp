// What names a connection in its records: its local and peer endpoints, kept beside its slot
// from the moment they are known (a client's connect completed, an accepted or adopted socket),
// so that its conn_close names it even when the kernel no longer can (reset by the peer, or
// looked at after the process has closed its descriptor); and a client's conn_open while it
// waits for its connect to complete (pending_open.hpp). One per fd number that ever held a
// tuned connection, allocated off the write path at its first one and never freed, like the
// slots themselves; each connection (a slot generation) writes it anew.
#pragma once

#include <atomic>
#include <cstdint>

#include "tcptune/config/cidr.hpp"

namespace tcptune::shim {

struct PendingOpen;
struct SocketSlot;

class ConnectionNames {
 public:
  // The endpoints of the slot's connection `generation`. Lock-free, no allocation,
  // async-signal-safe; two writers at once (an app thread and the worker completing the same
  // connect) do not mix their values: the second leaves the first's.
  void store(std::uint32_t generation, const config::Endpoint& local, const config::Endpoint& peer) noexcept;
  // False when none are stored for `generation` (or a store is under way).
  bool load(std::uint32_t generation, config::Endpoint& local, config::Endpoint& peer) const noexcept;

  // A client's conn_open until its connect completes; taken (exchanged for nullptr) by whoever
  // writes it.
  std::atomic<PendingOpen*> pending{nullptr};

 private:
  static constexpr std::uint32_t kNone = 0xffffffffU;     // no generation's
  static constexpr std::uint32_t kWriting = 0xfffffffeU;  // a store is under way
  static constexpr int kWords = 3;                        // address (16 bytes), family and port
  std::atomic<std::uint32_t> generation_{kNone};
  std::atomic<std::uint64_t> local_[kWords]{};
  std::atomic<std::uint64_t> peer_[kWords]{};
};

// The slot's names, allocated at its first use: not from a signal handler nor the write path.
// nullptr only when memory runs out.
ConnectionNames* names_for(SocketSlot& slot) noexcept;
// The slot's names if it has any (async-signal-safe).
ConnectionNames* names_if_any(const SocketSlot& slot) noexcept;

}  // namespace tcptune::shim
