// What the packet mover counts per direction; `status` reports it and the daemon logs it on exit.
#pragma once

#include <array>
#include <cstdint>

namespace tcptune::linkem {

struct DirectionCounters {
  std::uint64_t packets_in = 0;      // read from the sending side's TUN
  std::uint64_t packets = 0;         // written to the receiving side's TUN
  std::uint64_t bytes = 0;           // IP bytes written
  std::uint64_t drops_queue = 0;     // drop-tail: the serialization queue was full
  std::uint64_t drops_loss = 0;      // random loss
  std::uint64_t drops_pool = 0;      // no free packet buffer (the delay line holds too much); should stay 0
  std::uint64_t write_errors = 0;    // the receiving TUN refused the packet
  std::int64_t max_lateness_ns = 0;  // delivery time minus scheduled time, worst case
  std::uint64_t lateness_sum_ns = 0;
  std::uint64_t late_over_500us = 0;  // packets delivered more than 500 us after their scheduled time
  // Lateness histogram: 10 us bins up to 1 ms, 100 us bins up to 10 ms, then one bin for the rest.
  static constexpr std::size_t kFineBins = 100;
  static constexpr std::size_t kCoarseBins = 90;
  static constexpr std::size_t kBins = kFineBins + kCoarseBins + 1;
  std::array<std::uint64_t, kBins> lateness_bins{};

  static std::size_t bin_of(std::int64_t lateness_ns) {
    if (lateness_ns < 1000000) {
      return static_cast<std::size_t>(lateness_ns / 10000);
    }
    const auto coarse = static_cast<std::size_t>((lateness_ns - 1000000) / 100000);
    return coarse < kCoarseBins ? kFineBins + coarse : kBins - 1;
  }
  static double bin_upper_edge_us(std::size_t bin) {
    return bin < kFineBins ? static_cast<double>(bin + 1) * 10.0
                           : 1000.0 + static_cast<double>(bin - kFineBins + 1) * 100.0;
  }

  void count_lateness(std::int64_t lateness_ns) {
    lateness_sum_ns += static_cast<std::uint64_t>(lateness_ns);
    max_lateness_ns = lateness_ns > max_lateness_ns ? lateness_ns : max_lateness_ns;
    late_over_500us += lateness_ns > 500000 ? 1 : 0;
    ++lateness_bins[bin_of(lateness_ns)];
  }
  // The upper edge of the bin holding the q-quantile (q in (0, 1]), at most the maximum seen.
  double lateness_quantile_us(double q) const {
    std::uint64_t total = 0;
    for (const std::uint64_t n : lateness_bins) {
      total += n;
    }
    const double max_us = static_cast<double>(max_lateness_ns) / 1e3;
    std::uint64_t seen = 0;
    for (std::size_t i = 0; i + 1 < kBins; ++i) {
      seen += lateness_bins[i];
      if (total > 0 && static_cast<double>(seen) >= q * static_cast<double>(total)) {
        const double edge = bin_upper_edge_us(i);
        return edge < max_us ? edge : max_us;
      }
    }
    return max_us;
  }
};

}  // namespace tcptune::linkem
