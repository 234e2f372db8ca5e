// Ack latency: the time from a sampled write's return until the peer acknowledged its last
// byte, for one connection or a sum of connections. The shim's ack sampler measures it; the
// conn_close records and the Prometheus textfile report it.
#pragma once

#include <cstdint>

#include "latency_histogram.hpp"

namespace tcptune::telemetry {

struct AckLatency {
  LatencyHistogram histogram;
  std::uint64_t acked_before_first_poll = 0;  // faster than the sampler could see: not timed
  std::uint64_t sum_ns = 0;

  AckLatency& operator+=(const AckLatency& other) noexcept {
    histogram.merge(other.histogram);
    acked_before_first_poll += other.acked_before_first_poll;
    sum_ns += other.sum_ns;
    return *this;
  }
};

}  // namespace tcptune::telemetry
