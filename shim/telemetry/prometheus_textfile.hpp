// The Prometheus textfile (node_exporter's textfile collector format, text exposition 0.0.4):
// counters and histograms per rule and program, and gauges of the live processes, rewritten
// every [log] interval (by the shim's worker, or the supervisor's records thread) with
// write-then-rename, so the collector never reads half a file. What one process renders here
// is its share; textfile_merge.hpp sums the shares of every process of the program.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "ack_latency.hpp"
#include "connection_counters.hpp"
#include "file_calls.hpp"
#include "latency_histogram.hpp"
#include "log_drops.hpp"

namespace tcptune::telemetry {

struct MetricsRow {
  std::string rule;
  std::uint64_t connections = 0;
  ConnectionCounters counters;     // those with a Prometheus name are exported
  LatencyHistogram write_latency;  // its _sum is estimated from the buckets
  AckLatency acks;
};

// Who measured the rows, which decides what the file can claim. The supervisor never sees the
// program's writes, so the families counted from them (writes, bytes, heartbeats, write and ack
// latency) are left out rather than reported as zeros; it counts idle restarts from its polls.
enum class MetricsSource : std::uint8_t { preloaded_shim, supervisor };

// Options a rule asked for that did not take effect as asked, counted per connection.
struct OptionMiss {
  std::string rule;
  std::string option;   // as in the conn_open record's options: nodelay, rcvbuf, congestion, ...
  std::string outcome;  // refused, not_permitted, unavailable, capped
  std::uint64_t count = 0;
};

// What the file says beyond the rows.
struct MetricsContext {
  std::string program;
  // TCPTUNE_ARM (tcptune/config/arm_label.hpp): arm="..." on every series, after program, so
  // that processes of two arms sharing one file keep series of their own. Empty: no label.
  std::string arm;
  MetricsSource source = MetricsSource::preloaded_shim;
  std::uint64_t dropped_records = 0;
  std::vector<std::string> keep_warm_rules;  // the rules (names) whose connections are kept warm
  std::vector<OptionMiss> option_misses;
  // The log is on stderr: tcptune_log_records_dropped_total{program,reason="stderr_full"|"too_long"}.
  bool log_on_stderr = false;
  LogDrops log_drops;
};

// Histogram buckets at every power of two from 2^10 ns (about 1 us) to 2^35 ns (about 34 s):
// bucket bounds of the shim's own layout, so each cumulative count is exact. Sums are written
// in whole nanoseconds (seconds with nine decimals), so that shares add up exactly.
std::string render_prometheus(const std::vector<MetricsRow>& rows, const MetricsContext& context);

// Writes `text` to `path` through a temporary file in the same directory and rename().
// Returns an error message, empty on success.
std::string write_file_atomically(const std::string& path, const std::string& text,
                                  const FileCalls& calls = plain_file_calls());

}  // namespace tcptune::telemetry
