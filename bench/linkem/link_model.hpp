// The model of one direction of the emulated link, pure (no clock, no I/O) so that it can be unit-tested:
// a packet arriving at time 'now' is serialized at the link rate behind the packets before it (drop-tail
// when the queue is full), lost at random, then delayed by the one-way delay plus jitter, and never
// delivered before the packet ahead of it (jitter does not reorder).
#pragma once

#include <cstdint>
#include <vector>

namespace tcptune::linkem {

// One direction's parameters, as given on the command line.
struct LinkParams {
  std::int64_t delay_ns = 0;           // one-way propagation delay
  std::uint64_t rate_bps = 0;          // bits per second of IP packets; 0 = unlimited (no serialization)
  std::uint32_t queue_packets = 1000;  // packets that may wait for serialization; one more beyond is dropped
  double loss_pct = 0;                 // independent random loss, percent
  std::int64_t jitter_ns = 0;          // each packet's delay is delay +- a uniform draw in [0, jitter]

  bool operator==(const LinkParams&) const = default;
};

// xoshiro256** seeded through splitmix64: fast, and the same sequence on every compiler and library (the
// standard distributions are not specified bit-for-bit).
class Rng {
 public:
  explicit Rng(std::uint64_t seed);
  std::uint64_t next();
  // Uniform in [0, 1) with 53 random bits.
  double uniform();

 private:
  std::uint64_t state_[4];
};

enum class Verdict { kDeliver, kQueueDrop, kLossDrop };

struct Decision {
  Verdict verdict = Verdict::kDeliver;
  std::int64_t deliver_at_ns = 0;  // meaningful for kDeliver only
};

class DirectionModel {
 public:
  DirectionModel(const LinkParams& params, std::uint64_t seed);

  // A packet of 'ip_bytes' arrives at 'now_ns' (times must not go backwards between calls).
  Decision admit(std::int64_t now_ns, std::uint32_t ip_bytes);

  // Packets that had arrived by 'now_ns' and whose serialization has not started yet.
  std::uint32_t waiting(std::int64_t now_ns);
  const LinkParams& params() const { return params_; }

 private:
  void forget_started(std::int64_t now_ns);

  LinkParams params_;
  Rng rng_;
  // When serialization of the last admitted packet ends, in ns, plus the remainder of the exact division
  // bytes * 8e9 / rate in units of 1/rate ns, so that rounding never accumulates into a rate error.
  std::int64_t last_departure_ns_ = 0;
  std::uint64_t departure_remainder_ = 0;
  std::int64_t last_delivery_ns_ = 0;
  // Serialization start times of the admitted packets that are still waiting (a ring; starts only grow).
  std::vector<std::int64_t> waiting_starts_;
  std::size_t waiting_head_ = 0;
  std::size_t waiting_count_ = 0;
  bool started_ = false;
};

}  // namespace tcptune::linkem
