// The Prometheus textfile (node_exporter's textfile collector format, text exposition 0.0.4):
// counters and histograms per rule and program, rewritten every [log] interval (by the shim's
// worker, or the supervisor's records thread) with write-then-rename, so the collector never
// reads half a file.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "ack_latency.hpp"
#include "connection_counters.hpp"
#include "latency_histogram.hpp"

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

// Histogram buckets at every power of two from 2^10 ns (about 1 us) to 2^35 ns (about 34 s):
// bucket bounds of the shim's own layout, so each cumulative count is exact.
std::string render_prometheus(const std::vector<MetricsRow>& rows, const std::string& program,
                              std::uint64_t dropped_records, MetricsSource source);

// Records a log on stderr could not take (stderr_stream.hpp): its pipe was full, or one was longer
// than one write of PIPE_BUF bytes may be.
struct LogDrops {
  std::uint64_t full = 0;
  std::uint64_t too_long = 0;
  [[nodiscard]] std::uint64_t total() const { return full + too_long; }
};
// tcptune_log_records_dropped_total{program,reason="stderr_full"|"too_long"}, appended to the
// textfile of a process that logs to stderr.
std::string render_log_drops(const std::string& program, const LogDrops& drops);

// The calls that write and close the file. Plain system calls by default; the preloaded shim
// passes libc's next definitions, so that its own hooks are not re-entered.
struct FileCalls {
  ssize_t (*write)(int fd, const void* data, std::size_t size);
  int (*close)(int fd);
};
FileCalls plain_file_calls() noexcept;

// Writes `text` to `path` through a temporary file in the same directory and rename().
// Returns an error message, empty on success.
std::string write_file_atomically(const std::string& path, const std::string& text,
                                  const FileCalls& calls = plain_file_calls());

}  // namespace tcptune::telemetry
