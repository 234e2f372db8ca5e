#include "ab_statistics.hpp"

#include <gtest/gtest.h>

#include <cmath>

namespace tcptune::cli {
namespace {

// Reference values: SciPy 1.10.1 (Debian 12, python3-scipy), computed once as
//   scipy.stats.mannwhitneyu(first, second, alternative="two-sided", method=METHOD)
// with METHOD as named in each case; .statistic is U of the first sample.
struct Reference {
  const char* name;
  std::vector<double> first;
  std::vector<double> second;
  bool exact;  // method="exact", else "asymptotic" (use_continuity=True, the default)
  double u;
  double p_value;
};

TEST(AbStatistics, MannWhitneyMatchesScipy) {
  const std::vector<Reference> references = {
      {"separated 3x3", {4, 5, 6}, {1, 2, 3}, true, 9.0, 0.1},
      {"overlap 5x5", {1.1, 2.3, 3.7, 4.2, 5.9}, {3.1, 4.8, 6.2, 7.5, 8.0}, true, 4.0, 0.09523809523809523},
      {"unequal 4x7",
       {0.52, 0.61, 0.49, 0.70},
       {0.45, 0.38, 0.50, 0.41, 0.47, 0.36, 0.44},
       true,
       27.0,
       0.012121212121212121},
      {"12x15 without ties",
       {0.0, 3.7, 7.4, 1.0, 4.7, 8.4, 2.0, 5.7, 9.4, 3.0, 6.7, 0.3},
       {0.55, 5.85, 1.45, 6.75, 2.35, 7.65, 3.25, 8.55, 4.15, 9.45, 5.05, 0.65, 5.95, 1.55, 6.85},
       true,
       81.0,
       0.6832630957681436},
      {"ties", {1, 2, 2, 3, 3, 3}, {2, 3, 4, 4, 5}, false, 5.5, 0.08871369199677616},
      {"ties, a latency-like pair",
       {40.1, 40.3, 40.3, 41.0, 39.8},
       {0.5, 0.5, 0.6, 40.3, 0.4},
       false,
       22.0,
       0.05623780387727592},
  };
  for (const Reference& reference : references) {
    const RankTest test = mann_whitney_u(reference.first, reference.second);
    EXPECT_EQ(test.exact, reference.exact) << reference.name;
    EXPECT_DOUBLE_EQ(test.u, reference.u) << reference.name;
    EXPECT_NEAR(test.p_value, reference.p_value, 1e-12) << reference.name;
  }
}

TEST(AbStatistics, LargeSamplesUseTheNormalApproximation) {
  // SciPy 1.10.1, method="asymptotic": U = 1540.0, p = 0.5398219234122439; 60 values are
  // beyond kExactMaxSize, so the approximation is used although there are no ties.
  std::vector<double> first;
  std::vector<double> second;
  for (int i = 0; i < 60; ++i) {
    first.push_back(i * 0.7);
  }
  for (int i = 0; i < 55; ++i) {
    second.push_back(i * 0.7 + 3.35);
  }
  const RankTest test = mann_whitney_u(first, second);
  EXPECT_FALSE(test.exact);
  EXPECT_DOUBLE_EQ(test.u, 1540.0);
  EXPECT_NEAR(test.p_value, 0.5398219234122439, 1e-12);
}

TEST(AbStatistics, DegenerateSamples) {
  EXPECT_EQ(mann_whitney_u({}, {1, 2}).p_value, 1.0);
  EXPECT_EQ(mann_whitney_u({3, 3, 3}, {3, 3}).p_value, 1.0) << "all tied: no evidence either way";
  // One value each: U is 0 or 1, each with probability 1/2, so p is 1 either way.
  EXPECT_EQ(mann_whitney_u({1}, {2}).p_value, 1.0);
}

TEST(AbStatistics, SmallestPValue) {
  EXPECT_DOUBLE_EQ(smallest_p_value(3, 3), 0.1);       // 2 / C(6,3) = 2/20
  EXPECT_DOUBLE_EQ(smallest_p_value(4, 4), 2.0 / 70);  // C(8,4) = 70
  EXPECT_DOUBLE_EQ(smallest_p_value(5, 5), 2.0 / 252);
  EXPECT_DOUBLE_EQ(smallest_p_value(1, 1), 1.0);
  // The exact test reaches it for fully separated samples.
  EXPECT_DOUBLE_EQ(mann_whitney_u({10, 11, 12, 13}, {1, 2, 3, 4}).p_value, smallest_p_value(4, 4));
  EXPECT_EQ(fewest_runs_for(0.05), 4);
  EXPECT_EQ(fewest_runs_for(0.01), 5);
}

TEST(AbStatistics, Median) {
  EXPECT_EQ(median_of({3, 1, 2}), 2.0);
  EXPECT_EQ(median_of({4, 1, 3, 10}), 3.5);
  EXPECT_EQ(median_of({}), 0.0);
}

TEST(AbStatistics, BootstrapIsSeededAndBracketsTheRatio) {
  const std::vector<double> tuned = {0.051, 0.049, 0.055, 0.050, 0.060, 0.052, 0.048};
  const std::vector<double> observe = {1.02, 0.98, 1.10, 1.05, 0.99, 1.01, 1.03};
  const auto first = bootstrap_median_ratio(tuned, observe, 0.95, 2000, 1);
  const auto again = bootstrap_median_ratio(tuned, observe, 0.95, 2000, 1);
  ASSERT_TRUE(first && again);
  EXPECT_EQ(first->low, again->low) << "the same seed, the same interval";
  EXPECT_EQ(first->high, again->high);
  const double ratio = median_of(tuned) / median_of(observe);
  EXPECT_LE(first->low, ratio);
  EXPECT_GE(first->high, ratio);
  // Every resampled median lies within each sample's range, so the bounds do too.
  EXPECT_GE(first->low, 0.048 / 1.10);
  EXPECT_LE(first->high, 0.060 / 0.98);
  const auto other_seed = bootstrap_median_ratio(tuned, observe, 0.95, 2000, 2);
  ASSERT_TRUE(other_seed);
  EXPECT_TRUE(other_seed->low != first->low || other_seed->high != first->high) << "the seed drives the resampling";
}

TEST(AbStatistics, BootstrapOfConstantSamplesIsThePointRatio) {
  const auto interval = bootstrap_median_ratio({2, 2, 2}, {4, 4, 4, 4}, 0.95, 500, 7);
  ASSERT_TRUE(interval);
  EXPECT_EQ(interval->low, 0.5);
  EXPECT_EQ(interval->high, 0.5);
}

TEST(AbStatistics, BootstrapNeedsPositiveValues) {
  EXPECT_FALSE(bootstrap_median_ratio({1, 2}, {0, 1}, 0.95, 100, 1));
  EXPECT_FALSE(bootstrap_median_ratio({}, {1, 1}, 0.95, 100, 1));
}

TEST(AbStatistics, RunsAdvice) {
  // Log values with a pooled standard deviation of 0.1: at 5% and 80% power a t test needs
  // 2 * (1.95996 + 0.84162)^2 * 0.1^2 / 0.1^2 = 15.70 runs per arm to show a ratio of e^0.1;
  // the rank test 15.70 / (3/pi) = 16.44, so 17.
  const double sd = 0.1;
  const auto runs = runs_to_show(sd, std::exp(0.1), 0.05, 1000);
  ASSERT_TRUE(runs);
  EXPECT_EQ(*runs, 17);
  EXPECT_EQ(runs_to_show(sd, std::exp(-0.1), 0.05, 1000), runs) << "slower or faster alike";
  // And with 17 runs the detectable difference is just under e^0.1 - 1.
  EXPECT_LT(detectable_difference(sd, 17, 0.05), std::expm1(0.1));
  EXPECT_GT(detectable_difference(sd, 16, 0.05), std::expm1(0.1));
  EXPECT_FALSE(runs_to_show(sd, 1.0, 0.05, 1000)) << "no difference to show";
  EXPECT_FALSE(runs_to_show(sd, 1.001, 0.05, 1000)) << "more runs than allowed";
  EXPECT_EQ(runs_to_show(0.001, 2.0, 0.05, 1000), 4) << "never fewer than can reach p < 0.05";
}

TEST(AbStatistics, PooledLogSpread) {
  // logs {0, 2} and {1, 3}: squares about each mean 2 + 2 over 4 - 2 degrees of freedom: sd 1.414.
  const auto sd = pooled_log_sd({1, std::exp(2.0)}, {std::exp(1.0), std::exp(3.0)});
  ASSERT_TRUE(sd);
  EXPECT_NEAR(*sd, std::sqrt(2.0), 1e-12);
  EXPECT_FALSE(pooled_log_sd({1}, {2})) << "too few values";
  EXPECT_FALSE(pooled_log_sd({0, 1}, {2, 3})) << "no log of 0";
}

}  // namespace
}  // namespace tcptune::cli
