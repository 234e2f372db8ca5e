// What the write hooks measure on one tracked TCP connection: the write-latency histogram
// and the counters of a conn_close record. Updated from any thread with relaxed atomics (no
// locks, no allocation, async-signal-safe); read by the worker thread.
#pragma once

#include <sys/types.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <cstdint>

#include "connection_counters.hpp"
#include "latency_histogram.hpp"

namespace tcptune::telemetry {

// Where a 16-bit histogram bucket's wraps are counted (in units of 65536): a few cells,
// claimed lock-free by bucket. Wrapping needs 65536 writes in one bucket, so a connection
// rarely needs more than one or two; overflow beyond the cells is counted, not hidden.
class HistogramCarries {
 public:
  static constexpr std::size_t kCells = 6;
  void carry(int bucket) noexcept {
    const auto wanted = static_cast<std::uint32_t>(bucket + 1);
    for (auto& cell : cells_) {
      std::uint32_t seen = cell.bucket_plus_one.load(std::memory_order_acquire);
      if (seen == 0 && cell.bucket_plus_one.compare_exchange_strong(seen, wanted, std::memory_order_acq_rel)) {
        seen = wanted;
      }
      if (seen == wanted) {
        cell.units.fetch_add(1, std::memory_order_relaxed);
        return;
      }
    }
    lost_.fetch_add(1, std::memory_order_relaxed);
  }
  void merged_into(LatencyHistogram& into) const noexcept {
    for (const auto& cell : cells_) {
      const std::uint32_t bucket = cell.bucket_plus_one.load(std::memory_order_acquire);
      if (bucket != 0) {
        into.add(static_cast<int>(bucket) - 1,
                 cell.units.load(std::memory_order_relaxed) * ConnectionWriteHistogram::kCarryUnit);
      }
    }
  }
  [[nodiscard]] std::uint32_t lost() const noexcept { return lost_.load(std::memory_order_relaxed); }
  void reset() noexcept {
    for (auto& cell : cells_) {
      cell.units.store(0, std::memory_order_relaxed);
      cell.bucket_plus_one.store(0, std::memory_order_release);
    }
    lost_.store(0, std::memory_order_relaxed);
  }

 private:
  struct Cell {
    std::atomic<std::uint32_t> bucket_plus_one{0};
    std::atomic<std::uint32_t> units{0};
  };
  std::array<Cell, kCells> cells_{};
  std::atomic<std::uint32_t> lost_{0};
};

struct ConnectionStats {
  ConnectionWriteHistogram write_latency;
  HistogramCarries carries;
  AtomicConnectionCounters counters;
  std::atomic<std::int64_t> opened_ns{0};
  std::atomic<std::int64_t> last_write_end_ns{0};
  // Set while one write's ack is being timed by the worker: at most one sample at a time,
  // which makes it at most one per round trip under load and the first after each idle gap.
  std::atomic<bool> ack_sample_outstanding{false};

  // One write-family call that offered `offered` bytes, took `duration_ns` and returned
  // `result` (errno as the call left it).
  void record_write(std::uint64_t duration_ns, std::int64_t end_ns, ssize_t result, std::size_t offered,
                    int error) noexcept {
    counters.count_write(result, offered, error);
    last_write_end_ns.store(end_ns, std::memory_order_relaxed);
    const int wrapped = write_latency.record(duration_ns);
    if (wrapped != ConnectionWriteHistogram::kNoCarry) [[unlikely]] {
      carries.carry(wrapped);
    }
  }

  // The whole write-latency histogram: 16-bit counts plus their carries.
  void write_latency_into(LatencyHistogram& into) const noexcept {
    carries.merged_into(into);  // first: the residual merge reads into.count() for min/max
    write_latency.merged_into(into);
  }

  void reset(std::int64_t now_ns) noexcept {
    write_latency.reset();
    carries.reset();
    opened_ns.store(now_ns, std::memory_order_relaxed);
    counters.reset();
    last_write_end_ns.store(0, std::memory_order_relaxed);
    ack_sample_outstanding.store(false, std::memory_order_relaxed);
  }
};

}  // namespace tcptune::telemetry
