#include "ab_statistics.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace tcptune::cli {

namespace {

// P(Z > z) for a standard normal Z.
double normal_sf(double z) {
  return 0.5 * std::erfc(z / std::numbers::sqrt2);
}

// z with P(Z > z) = tail, by bisection: exact enough for sample sizes, and no table to trust.
double normal_upper_quantile(double tail) {
  double low = -40;
  double high = 40;
  for (int step = 0; step < 200; ++step) {
    const double middle = (low + high) / 2;
    (normal_sf(middle) > tail ? low : high) = middle;
  }
  return (low + high) / 2;
}

// P(U >= u) under the null hypothesis for samples of m and n distinct values. The largest value
// of both is one of the first sample's with probability m/(m+n), and then exceeds all n of the
// second: P[m][n](u) = m/(m+n) P[m-1][n](u-n) + n/(m+n) P[m][n-1](u). Probabilities, not counts,
// so that every step adds positive numbers and nothing overflows.
double exact_upper_tail(std::size_t m, std::size_t n, double u) {
  // previous[b] = distribution of U for (a-1, b); current[b] for (a, b).
  std::vector<std::vector<double>> previous(n + 1);
  for (std::size_t b = 0; b <= n; ++b) {
    previous[b] = {1.0};  // a = 0: U is 0
  }
  std::vector<std::vector<double>> current(n + 1);
  for (std::size_t a = 1; a <= m; ++a) {
    current[0] = {1.0};  // b = 0: U is 0
    for (std::size_t b = 1; b <= n; ++b) {
      std::vector<double>& here = current[b];
      here.assign(a * b + 1, 0.0);
      const double from_first = static_cast<double>(a) / static_cast<double>(a + b);
      const std::vector<double>& first_largest = previous[b];  // (a-1, b), shifted by b
      for (std::size_t value = 0; value < first_largest.size(); ++value) {
        here[value + b] += from_first * first_largest[value];
      }
      const std::vector<double>& second_largest = current[b - 1];  // (a, b-1)
      for (std::size_t value = 0; value < second_largest.size(); ++value) {
        here[value] += (1 - from_first) * second_largest[value];
      }
    }
    std::swap(previous, current);
  }
  const std::vector<double>& distribution = previous[n];
  double tail = 0;
  for (std::size_t value = distribution.size(); value-- > 0;) {
    if (static_cast<double>(value) < u) {
      break;
    }
    tail += distribution[value];
  }
  return tail;
}

class SplitMix64 {
 public:
  explicit SplitMix64(std::uint64_t seed) : state_(seed) {}
  std::uint64_t next() {
    std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30U)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27U)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31U);
  }
  // An index in [0, n) without modulo bias: draws below 2^64 mod n are drawn again.
  std::size_t below(std::size_t n) {
    const std::uint64_t bound = n;
    const std::uint64_t threshold = (0 - bound) % bound;
    for (;;) {
      const std::uint64_t draw = next();
      if (draw >= threshold) {
        return static_cast<std::size_t>(draw % bound);
      }
    }
  }

 private:
  std::uint64_t state_;
};

double resampled_median(const std::vector<double>& sample, SplitMix64& random, std::vector<double>& scratch) {
  scratch.resize(sample.size());
  for (double& value : scratch) {
    value = sample[random.below(sample.size())];
  }
  return median_of(scratch);
}

double sum_of_squares_about_mean(const std::vector<double>& logs) {
  if (logs.empty()) {
    return 0;
  }
  double mean = 0;
  for (double value : logs) {
    mean += value;
  }
  mean /= static_cast<double>(logs.size());
  double squares = 0;
  for (double value : logs) {
    squares += (value - mean) * (value - mean);
  }
  return squares;
}

// ARE of the rank test against the t test under normality.
constexpr double kRankEfficiency = 3 / std::numbers::pi;
constexpr double kPowerQuantile = 0.8416212335729143;  // z with P(Z < z) = 0.8: 80% power

}  // namespace

RankTest mann_whitney_u(const std::vector<double>& first, const std::vector<double>& second) {
  RankTest test;
  const std::size_t n1 = first.size();
  const std::size_t n2 = second.size();
  if (n1 == 0 || n2 == 0) {
    return test;
  }
  // Ranks of the pooled values, ties given their mean rank.
  std::vector<std::pair<double, bool>> pooled;  // (value, from the first sample)
  pooled.reserve(n1 + n2);
  for (double value : first) {
    pooled.emplace_back(value, true);
  }
  for (double value : second) {
    pooled.emplace_back(value, false);
  }
  std::sort(pooled.begin(), pooled.end());
  double first_rank_sum = 0;
  double tie_term = 0;  // sum of t^3 - t over groups of t tied values
  for (std::size_t start = 0; start < pooled.size();) {
    std::size_t end = start;
    while (end < pooled.size() && pooled[end].first == pooled[start].first) {
      ++end;
    }
    const double rank = (static_cast<double>(start + 1) + static_cast<double>(end)) / 2;
    for (std::size_t i = start; i < end; ++i) {
      first_rank_sum += pooled[i].second ? rank : 0;
    }
    const auto tied = static_cast<double>(end - start);
    tie_term += tied * tied * tied - tied;
    start = end;
  }
  const double m = static_cast<double>(n1);
  const double n = static_cast<double>(n2);
  test.u = first_rank_sum - m * (m + 1) / 2;
  const double larger_u = std::max(test.u, m * n - test.u);
  if (tie_term == 0 && n1 <= kExactMaxSize && n2 <= kExactMaxSize) {
    test.exact = true;
    test.p_value = std::min(1.0, 2 * exact_upper_tail(n1, n2, larger_u));
    return test;
  }
  const double total = m + n;
  const double variance = m * n / 12 * ((total + 1) - tie_term / (total * (total - 1)));
  if (variance <= 0) {  // every value tied: nothing tells the samples apart
    test.p_value = 1;
    return test;
  }
  const double z = (larger_u - m * n / 2 - 0.5) / std::sqrt(variance);
  test.p_value = std::clamp(2 * normal_sf(z), 0.0, 1.0);
  return test;
}

double smallest_p_value(std::size_t n1, std::size_t n2) {
  // 1 / C(n1 + n2, n1) as a running product, which stays in range where the binomial would not.
  double arrangements_inverse = 1;
  for (std::size_t i = 1; i <= n1; ++i) {
    arrangements_inverse *= static_cast<double>(i) / static_cast<double>(n2 + i);
  }
  return std::min(1.0, 2 * arrangements_inverse);
}

double median_of(std::vector<double> values) {
  if (values.empty()) {
    return 0;
  }
  const std::size_t middle = values.size() / 2;
  std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(middle), values.end());
  const double upper = values[middle];
  if (values.size() % 2 == 1) {
    return upper;
  }
  const double lower = *std::max_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(middle));
  return (lower + upper) / 2;
}

std::optional<Interval> bootstrap_median_ratio(const std::vector<double>& numerator,
                                               const std::vector<double>& denominator, double confidence, int resamples,
                                               std::uint64_t seed) {
  auto positive = [](const std::vector<double>& sample) {
    return !sample.empty() && std::all_of(sample.begin(), sample.end(), [](double v) { return v > 0; });
  };
  if (!positive(numerator) || !positive(denominator) || resamples < 1) {
    return std::nullopt;
  }
  SplitMix64 random(seed);
  std::vector<double> ratios;
  ratios.reserve(static_cast<std::size_t>(resamples));
  std::vector<double> scratch;
  for (int i = 0; i < resamples; ++i) {
    const double top = resampled_median(numerator, random, scratch);
    const double bottom = resampled_median(denominator, random, scratch);
    ratios.push_back(top / bottom);
  }
  std::sort(ratios.begin(), ratios.end());
  auto nearest_rank = [&](double fraction) {
    const auto rank = static_cast<std::size_t>(std::ceil(fraction * static_cast<double>(ratios.size())));
    return ratios[std::clamp<std::size_t>(rank, 1, ratios.size()) - 1];
  };
  return Interval{nearest_rank((1 - confidence) / 2), nearest_rank((1 + confidence) / 2)};
}

double detectable_difference(double log_sd, int runs, double alpha) {
  const double z = normal_upper_quantile(alpha / 2) + kPowerQuantile;
  return std::expm1(z * log_sd * std::sqrt(2 / (static_cast<double>(runs) * kRankEfficiency)));
}

int fewest_runs_for(double alpha) {
  int runs = 1;
  while (smallest_p_value(static_cast<std::size_t>(runs), static_cast<std::size_t>(runs)) >= alpha) {
    ++runs;
  }
  return runs;
}

std::optional<int> runs_to_show(double log_sd, double ratio, double alpha, int limit) {
  const double difference = std::abs(std::log(ratio));
  if (!(difference > 0) || !std::isfinite(difference)) {
    return std::nullopt;
  }
  const double z = normal_upper_quantile(alpha / 2) + kPowerQuantile;
  const double needed = 2 * (z * log_sd / difference) * (z * log_sd / difference) / kRankEfficiency;
  if (!(needed <= limit)) {
    return std::nullopt;
  }
  return std::max(fewest_runs_for(alpha), static_cast<int>(std::ceil(needed)));
}

std::optional<double> pooled_log_sd(const std::vector<double>& first, const std::vector<double>& second) {
  std::vector<double> first_logs;
  std::vector<double> second_logs;
  for (auto [from, to] : {std::pair{&first, &first_logs}, std::pair{&second, &second_logs}}) {
    for (double value : *from) {
      if (!(value > 0)) {
        return std::nullopt;
      }
      to->push_back(std::log(value));
    }
  }
  const std::size_t degrees = first.size() + second.size();
  if (degrees < 3) {
    return std::nullopt;
  }
  const double squares = sum_of_squares_about_mean(first_logs) + sum_of_squares_about_mean(second_logs);
  const std::size_t groups = (first.empty() ? 0 : 1) + (second.empty() ? 0 : 1);
  return std::sqrt(squares / static_cast<double>(degrees - groups));
}

}  // namespace tcptune::cli
