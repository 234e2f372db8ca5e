// Ack latency: the time from a sampled write's return until the peer acknowledged its last
// byte. The app's write path hands over at most one sample per connection at a time (see
// maybe_sample_ack); the worker polls the outstanding ones every kAckPollNs through
// ioctl(SIOCOUTQ) and keeps per-connection statistics until the connection's close record
// takes them. Worker thread only.
#pragma once

#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "ack_latency.hpp"

namespace tcptune::shim {

// A write whose acknowledgement the worker times.
struct AckSample {
  int fd = -1;
  std::uint32_t generation = 0;
  std::uint64_t bytes_after = 0;  // the connection's bytes written once this write returned
  std::int64_t write_end_ns = 0;
  bool seen_unacked = false;  // by a poll: only then is the time to the ack known to 1 poll
};

// How often outstanding samples are polled: the ack latency's resolution.
inline constexpr std::int64_t kAckPollNs = 1'000'000;

class AckSampler {
 public:
  void add(const AckSample& sample) { outstanding_.push_back(sample); }
  [[nodiscard]] bool has_outstanding() const noexcept { return !outstanding_.empty(); }
  // One poll of every outstanding sample at now_ns: those acknowledged are timed, those whose
  // connection closed meanwhile are dropped.
  void poll(std::int64_t now_ns);
  // Every kAckSweepNs: drops the statistics of connections found closed twice in a row (their
  // close record was lost, so nothing else would take them).
  void sweep_closed(std::int64_t now_ns);
  // A closing connection's statistics, removed.
  telemetry::AckLatency take(int fd, std::uint32_t generation);
  // An open connection's statistics so far, added to `into` (the Prometheus rows).
  void add_open_to(int fd, std::uint32_t generation, telemetry::AckLatency& into) const;

 private:
  // Sparse, because acks cluster in a few buckets.
  struct Stats {
    std::map<int, std::uint64_t> buckets;
    std::uint64_t acked_before_first_poll = 0;
    std::uint64_t max_ns = 0;
    std::uint64_t sum_ns = 0;
    bool seen_closed = false;  // by the last sweep: the connection had closed
  };
  static void add_to(const Stats& stats, telemetry::AckLatency& into);
  std::map<std::pair<int, std::uint32_t>, Stats> stats_;  // by (fd, generation)
  std::vector<AckSample> outstanding_;
  std::int64_t next_sweep_ns_ = 0;
};

}  // namespace tcptune::shim
