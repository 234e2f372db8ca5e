// The Prometheus textfile (node_exporter's textfile collector format, text exposition 0.0.4):
// counters and histograms per rule and program, rewritten by the worker every [log] interval
// with write-then-rename, so the collector never reads half a file.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ack_sampler.hpp"
#include "connection_counters.hpp"
#include "latency_histogram.hpp"

namespace tcptune::shim {

struct MetricsRow {
  std::string rule;
  std::uint64_t connections = 0;
  telemetry::ConnectionCounters counters;     // those with a Prometheus name are exported
  telemetry::LatencyHistogram write_latency;  // its _sum is estimated from the buckets
  AckLatency acks;
};

// Histogram buckets at every power of two from 2^10 ns (about 1 us) to 2^35 ns (about 34 s):
// bucket bounds of the shim's own layout, so each cumulative count is exact.
std::string render_prometheus(const std::vector<MetricsRow>& rows, const std::string& program,
                              std::uint64_t dropped_records);

// Writes `text` to `path` through a temporary file in the same directory and rename().
// Returns an error message, empty on success.
std::string write_file_atomically(const std::string& path, const std::string& text);

}  // namespace tcptune::shim
