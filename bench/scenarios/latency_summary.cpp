#include "latency_summary.hpp"

#include <algorithm>
#include <cstdio>

namespace tcptune::bench {

double percentile(std::vector<double> sample, double p) {
  if (sample.empty()) {
    return 0;
  }
  std::sort(sample.begin(), sample.end());
  // Nearest rank: the smallest value with at least p% of the sample at or below it.
  auto rank = static_cast<std::size_t>(p / 100.0 * static_cast<double>(sample.size()) + 0.999999);
  rank = std::clamp<std::size_t>(rank, 1, sample.size());
  return sample[rank - 1];
}

std::string summary_json(const std::vector<double>& sample) {
  char buffer[256];
  std::snprintf(buffer, sizeof buffer, R"({"count":%zu,"min":%.4f,"p50":%.4f,"p90":%.4f,"p99":%.4f,"max":%.4f})",
                sample.size(), percentile(sample, 0), percentile(sample, 50), percentile(sample, 90),
                percentile(sample, 99), percentile(sample, 100));
  return buffer;
}

}  // namespace tcptune::bench
