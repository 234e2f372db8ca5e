// A fleet A/B's samples: per arm, one value per step of the time window, computed from what
// Prometheus returns for the shim's series (increases of counters and of histogram buckets over
// each step, the steps not overlapping). Free of I/O, so each computation is tested on its own.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ab_verdict.hpp"
#include "log_summary.hpp"
#include "prometheus_api.hpp"

namespace tcptune::cli {

// Cumulative bucket counts, (upper bound in s, count), the last one +Inf.
using CumulativeBuckets = std::vector<std::pair<double, double>>;

// What one arm counted in one step (increases over the step; NaN or absent: no series).
struct StepCounts {
  CumulativeBuckets write_latency;
  CumulativeBuckets ack_latency;
  std::optional<double> acks_before_first_poll;
  std::optional<double> writes;
  std::optional<double> bytes;
  std::optional<double> idle_restarts;
  std::optional<double> connections;
  std::optional<double> heartbeats;
  std::optional<double> processes;  // live processes at the step's end (a gauge)
};

// An arm's steps by time (Unix s at the step's end).
using ArmSteps = std::map<double, StepCounts>;

// Prometheus's histogram_quantile on cumulative buckets: linear within the bucket the rank
// falls in (from 0 in the first), the highest finite bound when it falls in +Inf; buckets made
// monotonic first (an increase() of each is extrapolated on its own). nullopt without a count.
std::optional<double> bucket_quantile(double q, CumulativeBuckets buckets);

// A latency percentile of a step in `unit_s` (1e-6: us, 1e-3: ms) from its timed buckets and
// the samples below the resolution (acks faster than the sampler's first poll): those rank below
// every timed one, and a percentile among them reads "<resolution" (RunValue::below_resolution).
std::optional<RunValue> step_percentile(double p, const CumulativeBuckets& timed, double below_resolution,
                                        double unit_s, double resolution);

// Fills `steps` from a query's series: for "le" buckets (by le), or a plain value.
void add_bucket_series(const std::vector<PromSeries>& series, CumulativeBuckets StepCounts::*field, ArmSteps& steps);
void add_value_series(const std::vector<PromSeries>& series, std::optional<double> StepCounts::*field, ArmSteps& steps);

// The buckets summed over every step, as the CDF plots read a histogram (bounds in ns).
MergedHistogram merged_histogram(const ArmSteps& steps, CumulativeBuckets StepCounts::*field);

// Lag-1 autocorrelation of values in time order; nullopt for fewer than 4 or no spread (none
// beyond rounding).
std::optional<double> lag1_autocorrelation(const std::vector<double>& values);

}  // namespace tcptune::cli
