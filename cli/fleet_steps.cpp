#include "fleet_steps.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace tcptune::cli {

namespace {

bool usable(double value) {
  return std::isfinite(value);
}

}  // namespace

std::optional<double> bucket_quantile(double q, CumulativeBuckets buckets) {
  std::sort(buckets.begin(), buckets.end());
  if (buckets.size() < 2 || !std::isinf(buckets.back().first)) {
    return std::nullopt;
  }
  double highest = 0;
  for (auto& [bound, count] : buckets) {
    count = std::max(highest, usable(count) ? count : 0.0);
    highest = count;
  }
  const double observations = buckets.back().second;
  if (observations <= 0) {
    return std::nullopt;
  }
  double rank = q * observations;
  std::size_t b = 0;
  while (b + 1 < buckets.size() && buckets[b].second < rank) {
    ++b;
  }
  if (b == buckets.size() - 1) {
    return buckets[b - 1].first;
  }
  if (b == 0 && buckets[0].first <= 0) {
    return buckets[0].first;
  }
  double start = 0;
  double count = buckets[b].second;
  if (b > 0) {
    start = buckets[b - 1].first;
    count -= buckets[b - 1].second;
    rank -= buckets[b - 1].second;
  }
  return count > 0 ? start + (buckets[b].first - start) * (rank / count) : start;
}

std::optional<RunValue> step_percentile(double p, const CumulativeBuckets& timed, double below_resolution,
                                        double unit_s, double resolution) {
  double timed_count = 0;
  for (const auto& [bound, count] : timed) {
    if (std::isinf(bound) && usable(count)) {
      timed_count = std::max(0.0, count);
    }
  }
  below_resolution = usable(below_resolution) ? std::max(0.0, below_resolution) : 0.0;
  const double total = timed_count + below_resolution;
  if (total <= 0) {
    return std::nullopt;
  }
  const double rank = p / 100.0 * total;
  if (rank <= below_resolution) {
    return RunValue{resolution, true};
  }
  const std::optional<double> seconds = bucket_quantile((rank - below_resolution) / timed_count, timed);
  if (!seconds) {
    return std::nullopt;
  }
  return RunValue{*seconds / unit_s, false};
}

void add_bucket_series(const std::vector<PromSeries>& series, CumulativeBuckets StepCounts::*field, ArmSteps& steps) {
  for (const PromSeries& one : series) {
    const auto le = one.labels.find("le");
    if (le == one.labels.end()) {
      continue;
    }
    const double bound =
        le->second == "+Inf" ? std::numeric_limits<double>::infinity() : std::strtod(le->second.c_str(), nullptr);
    for (const auto& [time, value] : one.points) {
      if (usable(value)) {
        (steps[time].*field).emplace_back(bound, value);
      }
    }
  }
}

void add_value_series(const std::vector<PromSeries>& series, std::optional<double> StepCounts::*field,
                      ArmSteps& steps) {
  for (const PromSeries& one : series) {
    for (const auto& [time, value] : one.points) {
      if (usable(value)) {
        std::optional<double>& into = steps[time].*field;
        into = into.value_or(0) + value;
      }
    }
  }
}

MergedHistogram merged_histogram(const ArmSteps& steps, CumulativeBuckets StepCounts::*field) {
  std::map<double, double> cumulative;  // by bound, summed over the steps
  for (const auto& [time, counts] : steps) {
    CumulativeBuckets buckets = counts.*field;
    std::sort(buckets.begin(), buckets.end());
    double highest = 0;
    for (const auto& [bound, count] : buckets) {
      highest = std::max(highest, usable(count) ? count : 0.0);
      cumulative[bound] += highest;
    }
  }
  MergedHistogram merged;
  double previous_bound = 0;
  double previous_count = 0;
  for (const auto& [bound, count] : cumulative) {
    const double in_bucket = std::max(0.0, count - previous_count);
    if (!std::isinf(bound) && std::llround(in_bucket) > 0) {
      merged.buckets[{previous_bound * 1e9, bound * 1e9}] = static_cast<std::uint64_t>(std::llround(in_bucket));
      merged.max_us = bound * 1e6;
    }
    if (!std::isinf(bound)) {
      previous_bound = bound;
    }
    previous_count = std::max(previous_count, count);
  }
  return merged;
}

std::optional<double> lag1_autocorrelation(const std::vector<double>& values) {
  if (values.size() < 4) {
    return std::nullopt;
  }
  double mean = 0;
  for (const double value : values) {
    mean += value;
  }
  mean /= static_cast<double>(values.size());
  double variance = 0;
  double covariance = 0;
  for (std::size_t i = 0; i < values.size(); ++i) {
    variance += (values[i] - mean) * (values[i] - mean);
    if (i > 0) {
      covariance += (values[i] - mean) * (values[i - 1] - mean);
    }
  }
  // Values equal but for rounding (a percentile interpolated at the same place every step) have
  // no correlation worth naming.
  if (variance <= 1e-18 * mean * mean * static_cast<double>(values.size()) || variance <= 0) {
    return std::nullopt;
  }
  return covariance / variance;
}

}  // namespace tcptune::cli
