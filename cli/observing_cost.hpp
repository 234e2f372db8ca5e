// What observing costs an arm: the shim's own CPU time per measured write, as bench/micro's
// bench_hook_overhead measured it (docs/benchmarks.md, Hook overhead: `tcp_write_measured`,
// medians of repeated runs on the development VM), applied to the arm's own write rate and
// write-call duration from its metrics. A bench figure, not a measurement of the arm's hosts:
// the write clock (TSC or clock_gettime) decides which end of the range applies.
#pragma once

#include <string>

namespace tcptune::cli {

inline constexpr double kMeasuredWriteCostTscNs = 21.0;           // tcp_write_measured, TSC write clock
inline constexpr double kMeasuredWriteCostClockGettimeNs = 60.0;  // the same with clock_gettime (its budget)

// One line: the cost per write, per second at `writes_per_s`, and against a write call of
// `write_p50_us` (either may be <= 0: unknown, left out).
std::string observing_cost_line(const std::string& arm, double writes_per_s, double write_p50_us);

}  // namespace tcptune::cli
