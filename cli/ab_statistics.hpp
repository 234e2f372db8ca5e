// The statistics behind `tcptune ab`'s verdicts, free of I/O: the Mann-Whitney U test, a seeded
// bootstrap interval for the ratio of two medians, and how many runs would show a difference.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace tcptune::cli {

struct RankTest {
  double u = 0;        // U of the first sample: pairs where it is larger, ties counting one half
  double p_value = 1;  // two-sided
  bool exact = false;  // exact distribution (no ties, both samples of at most kExactMaxSize)
};

// Largest sample size for the exact distribution; above it, or with ties, the normal
// approximation with the ties correction and a continuity correction (as
// scipy.stats.mannwhitneyu's method="asymptotic", use_continuity=True).
constexpr std::size_t kExactMaxSize = 50;

// Two-sided Mann-Whitney U test of `first` against `second`; p = 1 when either is empty.
RankTest mann_whitney_u(const std::vector<double>& first, const std::vector<double>& second);

// The smallest two-sided p-value any data of these sizes can give (every value of one sample
// below every value of the other): 2 / C(n1 + n2, n1), at most 1.
double smallest_p_value(std::size_t n1, std::size_t n2);

// The median; the mean of the middle two for an even count. 0 for no values.
double median_of(std::vector<double> values);

struct Interval {
  double low = 0;
  double high = 0;
};

// Percentile bootstrap interval of median(numerator) / median(denominator): `resamples` times
// each sample is drawn again with replacement (splitmix64 seeded with `seed`, so the same data
// give the same interval everywhere), and the ratios' (1-confidence)/2 and (1+confidence)/2
// quantiles (nearest rank) are the bounds. None when a sample is empty or holds a value <= 0
// (a ratio would divide by 0 or mean nothing).
std::optional<Interval> bootstrap_median_ratio(const std::vector<double>& numerator,
                                               const std::vector<double>& denominator, double confidence, int resamples,
                                               std::uint64_t seed);

// Sample sizes for the test at two-sided level alpha and 80% power, from the spread of the log
// values (so a difference reads as a ratio): the normal-theory size for a t test on the logs,
// divided by the rank test's asymptotic relative efficiency (3/pi). `log_sd` is the pooled
// standard deviation of the log values.
// The relative difference (0.25: 25%) that `runs` runs per arm would show.
double detectable_difference(double log_sd, int runs, double alpha);
// The runs per arm that would show a ratio of medians `ratio` (never fewer than the fewest that
// can reach alpha at all); nullopt when that exceeds `limit`, or the ratio is 1.
std::optional<int> runs_to_show(double log_sd, double ratio, double alpha, int limit);
// The fewest runs per arm (equal arms) whose smallest p-value is below alpha.
int fewest_runs_for(double alpha);
// Pooled standard deviation of the natural logs of two samples (values > 0); nullopt when a
// value is <= 0 or there are fewer than 3 values in all.
std::optional<double> pooled_log_sd(const std::vector<double>& first, const std::vector<double>& second);

}  // namespace tcptune::cli
