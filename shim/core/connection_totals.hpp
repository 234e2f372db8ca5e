// The worker's sums of measured connections, per row: the process, [defaults] and each rule.
// Closed connections join from their snapshots; a connection whose record was lost (a full
// pool or ring) and a write that returned after its descriptor closed are counted lock-free by
// the app's thread and joined by the worker, so counts are never lost with a record.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "ack_latency.hpp"
#include "connection_counters.hpp"
#include "connection_summary.hpp"
#include "latency_histogram.hpp"

namespace tcptune::shim {

struct Totals {
  std::uint64_t connections = 0;
  telemetry::ConnectionCounters counters;
  telemetry::LatencyHistogram write_latency;
  telemetry::AckLatency acks;
};

class ConnectionTotals {
 public:
  // Rows: 0 the process, 1 [defaults], 2 + i rule i.
  explicit ConnectionTotals(std::size_t rule_count);

  // Worker: a closed connection (or one open at exit) and its ack latencies.
  void add_closed(const ConnectionSnapshot& snapshot, const telemetry::AckLatency& acks);
  // Any thread, lock-free, async-signal-safe: a connection whose record was lost.
  void count_unrecorded(std::int16_t rule_index, const telemetry::ConnectionCounters& counters) noexcept;
  // Any thread, lock-free, async-signal-safe: a write that returned after another thread
  // closed its descriptor (its connection's record is already taken).
  void count_write_after_close(std::int16_t rule_index, ssize_t result, std::size_t offered, int error) noexcept;
  // Worker: what the app's threads counted joins the process's and the rules' totals.
  void absorb_unrecorded();

  [[nodiscard]] const Totals& process() const noexcept { return rows_[0]; }
  // nullptr for an index outside the policy (a policy reloaded in a fork child, say).
  [[nodiscard]] const Totals* rule(std::int16_t rule_index) const noexcept;
  [[nodiscard]] std::size_t row_count() const noexcept { return rows_.size(); }
  [[nodiscard]] const Totals& row(std::size_t index) const noexcept { return rows_[index]; }

  // Fork child: the parent's connections are the parent's.
  void reset() noexcept;

 private:
  struct Unrecorded {
    std::atomic<std::uint64_t> connections{0};
    telemetry::AtomicConnectionCounters counters;
  };
  Unrecorded* unrecorded_for(std::int16_t rule_index) noexcept;
  std::vector<Totals> rows_;
  std::unique_ptr<Unrecorded[]> unrecorded_;  // indexed like rows_, from 1
  std::atomic<bool> unrecorded_pending_{false};
};

}  // namespace tcptune::shim
