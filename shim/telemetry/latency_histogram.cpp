#include "latency_histogram.hpp"

#include <algorithm>

namespace tcptune::telemetry {

void LatencyHistogram::add(int bucket, std::uint64_t count) noexcept {
  counts_[static_cast<std::size_t>(bucket)] += count;
  total_ += count;
}

void LatencyHistogram::observe_range(std::uint64_t low, std::uint64_t high) noexcept {
  min_ = std::min(min_, low);
  max_ = std::max(max_, high);
}

void LatencyHistogram::merge(const LatencyHistogram& other) noexcept {
  if (other.total_ == 0 && other.min_ == UINT64_MAX && other.max_ == 0) {
    return;  // empty (a connection that wrote nothing, say): no bucket to go through
  }
  for (std::size_t i = 0; i < counts_.size(); ++i) {
    counts_[i] += other.counts_[i];
  }
  total_ += other.total_;
  min_ = std::min(min_, other.min_);
  max_ = std::max(max_, other.max_);
}

double LatencyHistogram::percentile_ns(double p) const noexcept {
  if (total_ == 0) {
    return 0;
  }
  const double wanted = std::clamp(p, 0.0, 100.0) / 100.0 * static_cast<double>(total_);
  auto rank = static_cast<std::uint64_t>(wanted);
  if (static_cast<double>(rank) < wanted || rank == 0) {
    ++rank;  // nearest rank: ceil(p * n), at least 1
  }
  std::uint64_t seen = 0;
  for (int bucket = 0; bucket < HistogramLayout::kBuckets; ++bucket) {
    seen += counts_[static_cast<std::size_t>(bucket)];
    if (seen >= rank) {
      return std::clamp(HistogramLayout::representative(bucket), static_cast<double>(min_ns()),
                        static_cast<double>(max_));
    }
  }
  return static_cast<double>(max_);
}

double LatencyHistogram::estimated_sum_ns() const noexcept {
  double sum = 0;
  for (int bucket = 0; bucket < HistogramLayout::kBuckets; ++bucket) {
    const std::uint64_t count = counts_[static_cast<std::size_t>(bucket)];
    if (count != 0) {
      const double value =
          std::clamp(HistogramLayout::representative(bucket), static_cast<double>(min_ns()), static_cast<double>(max_));
      sum += value * static_cast<double>(count);
    }
  }
  return sum;
}

void ConnectionWriteHistogram::reset() noexcept {
  if (min_ns_.load(std::memory_order_relaxed) == UINT64_MAX) {
    return;  // nothing recorded since the last reset (every record lowers the minimum): all zero
  }
  for (auto& cell : counts_) {
    cell.store(0, std::memory_order_relaxed);
  }
  min_ns_.store(UINT64_MAX, std::memory_order_relaxed);
  max_ns_.store(0, std::memory_order_relaxed);
}

void ConnectionWriteHistogram::merged_into(LatencyHistogram& into) const noexcept {
  std::uint64_t recorded = 0;
  for (int bucket = 0; bucket < HistogramLayout::kBuckets; ++bucket) {
    const std::uint16_t count = counts_[static_cast<std::size_t>(bucket)].load(std::memory_order_relaxed);
    into.add(bucket, count);
    recorded += count;
  }
  const std::uint64_t low = min_ns_.load(std::memory_order_relaxed);
  if (recorded > 0 || into.count() > 0) {
    into.observe_range(low, max_ns_.load(std::memory_order_relaxed));
  }
}

}  // namespace tcptune::telemetry
