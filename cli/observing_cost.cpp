#include "observing_cost.hpp"

#include <cstdio>

namespace tcptune::cli {

namespace {

// Two significant digits, three from 100 up (no "2e+02").
std::string number(double value) {
  char text[32];
  (void)std::snprintf(text, sizeof text, value >= 100 && value < 1e6 ? "%.0f" : "%.2g", value);
  return text;
}

}  // namespace

std::string observing_cost_line(const std::string& arm, double writes_per_s, double write_p50_us) {
  std::string line = "what observing costs the " + arm +
                     " arm (the --off arm, under tcptune run --observe): " + number(kMeasuredWriteCostTscNs) + "-" +
                     number(kMeasuredWriteCostClockGettimeNs) +
                     " ns of CPU per write (bench_hook_overhead's tcp_write_measured, TSC or clock_gettime write "
                     "clock; docs/benchmarks.md)";
  if (writes_per_s > 0) {
    line += "; at its median " + number(writes_per_s) + " writes/s, " +
            number(writes_per_s * kMeasuredWriteCostTscNs / 1000) + "-" +
            number(writes_per_s * kMeasuredWriteCostClockGettimeNs / 1000) + " us of CPU per second (" +
            number(writes_per_s * kMeasuredWriteCostTscNs / 1e7) + "-" +
            number(writes_per_s * kMeasuredWriteCostClockGettimeNs / 1e7) + "% of one core, over all its processes)";
  }
  if (write_p50_us > 0) {
    line += "; " + number(kMeasuredWriteCostTscNs / 10 / write_p50_us) + "-" +
            number(kMeasuredWriteCostClockGettimeNs / 10 / write_p50_us) + "% of its median write call (" +
            number(write_p50_us) + " us)";
  }
  return line + "; the on arm is measured the same way, so the verdicts compare the policies, not the measurement";
}

}  // namespace tcptune::cli
