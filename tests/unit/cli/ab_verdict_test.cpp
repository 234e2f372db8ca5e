#include "ab_verdict.hpp"

#include <gtest/gtest.h>

namespace tcptune::cli {
namespace {

std::vector<RunValue> values(std::initializer_list<double> list) {
  std::vector<RunValue> out;
  for (double value : list) {
    out.push_back({value, false});
  }
  return out;
}

TEST(AbVerdict, TenfasterIsBetterWithFiveRuns) {
  const Verdict verdict =
      judge(values({0.89, 0.88, 0.93, 0.90, 0.91}), values({0.054, 0.037, 0.063, 0.05, 0.06}), Better::lower);
  EXPECT_EQ(verdict.word, "better");
  EXPECT_TRUE(verdict.test.exact);
  EXPECT_DOUBLE_EQ(verdict.test.p_value, 2.0 / 252) << "fully separated 5 vs 5";
  ASSERT_TRUE(verdict.ratio && verdict.interval);
  EXPECT_NEAR(*verdict.ratio, 0.054 / 0.90, 1e-12);
  EXPECT_LT(verdict.interval->high, 1.0);
  EXPECT_TRUE(verdict.advice.empty());
}

TEST(AbVerdict, DirectionFollowsWhatIsBetter) {
  const auto low = values({1, 2, 3, 4, 5});
  const auto high = values({10, 20, 30, 40, 50});
  EXPECT_EQ(judge(low, high, Better::lower).word, "worse") << "tuned slower";
  EXPECT_EQ(judge(low, high, Better::higher).word, "better") << "tuned moves more bytes";
  EXPECT_EQ(judge(low, high, Better::unjudged).word, "");
}

TEST(AbVerdict, ThreeRunsCanShowNothing) {
  const Verdict verdict = judge(values({1.0, 1.1, 1.2}), values({0.1, 0.11, 0.12}), Better::lower);
  EXPECT_EQ(verdict.word, "no difference shown");
  EXPECT_DOUBLE_EQ(verdict.test.p_value, 0.1);
  EXPECT_EQ(
      verdict.advice.rfind("with 3 runs per arm no difference can be shown (the smallest p-value possible is 0.1)", 0),
      0U)
      << verdict.advice;
  EXPECT_NE(verdict.advice.find("rerun with --runs 5"), std::string::npos) << verdict.advice;
}

// 5 runs asked, 2 of the tuned ones sampled a value (a short program): more runs in proportion,
// never the number just run.
TEST(AbVerdict, RunsWithoutAValueScaleTheAdvice) {
  const Verdict verdict =
      judge(values({44.7, 48.3, 47.9, 50.2, 45.0}), values({0.5, 0.6}), Better::lower);
  EXPECT_EQ(verdict.word, "no difference shown");
  EXPECT_NE(verdict.advice.find("only 2 of one arm's runs had a value: rerun with --runs 10"), std::string::npos)
      << verdict.advice;
}

TEST(AbVerdict, OverlappingArmsGetTheRunsThatWouldShowIt) {
  const Verdict verdict =
      judge(values({1.00, 1.10, 0.95, 1.05, 1.20}), values({0.98, 1.02, 0.90, 1.08, 0.97}), Better::lower);
  EXPECT_EQ(verdict.word, "no difference shown");
  EXPECT_EQ(verdict.advice.rfind("arms overlap; with 5 runs per arm a difference of ", 0), 0U) << verdict.advice;
  EXPECT_NE(verdict.advice.find("would be shown (80% of the time); rerun with --runs "), std::string::npos)
      << verdict.advice;
}

TEST(AbVerdict, BelowTheResolution) {
  const std::vector<RunValue> fast = {{1, true}, {1, true}, {1, true}, {1, true}, {1, true}};
  const Verdict both = judge(fast, fast, Better::lower);
  EXPECT_EQ(both.word, "no difference shown");
  EXPECT_FALSE(both.ratio) << "two bounds make no ratio";
  EXPECT_EQ(both.advice, "every run of both arms was below the resolution: this measurement cannot tell them apart");
  const Verdict tuned_fast = judge(values({44, 45, 48, 47, 49}), fast, Better::lower);
  EXPECT_EQ(tuned_fast.word, "better") << "below the resolution ranks below every timed value";
  ASSERT_TRUE(tuned_fast.ratio);
  EXPECT_EQ(tuned_fast.ratio_bound, '<');
  EXPECT_NEAR(*tuned_fast.ratio, 1.0 / 47, 1e-12);
  const ArmSummary summary = summarize_arm({{1, true}, {1, true}, {30, false}});
  EXPECT_TRUE(summary.median_below_resolution);
  EXPECT_TRUE(summary.low.below_resolution);
  EXPECT_EQ(summary.high.value, 30);
}

TEST(AbVerdict, MissingValuesSayWhy) {
  const Verdict verdict = judge({}, values({1, 2}), Better::lower);
  EXPECT_EQ(verdict.word, "");
  EXPECT_EQ(verdict.reason, "no value in the observe-only arm");
}

}  // namespace
}  // namespace tcptune::cli
