#include "ab_table.hpp"

#include <gtest/gtest.h>

namespace tcptune::cli {
namespace {

TEST(AbTable, SpreadOfRuns) {
  const Spread odd = spread_of({3, 1, 2});
  EXPECT_EQ(odd.median, 2.0);
  EXPECT_EQ(odd.low, 1.0);
  EXPECT_EQ(odd.high, 3.0);
  const Spread even = spread_of({4, 1, 3, 10});
  EXPECT_EQ(even.median, 3.5);  // the mean of the middle two
  EXPECT_EQ(even.low, 1.0);
  EXPECT_EQ(even.high, 10.0);
  const Spread none = spread_of({});
  EXPECT_EQ(none.median, 0.0);
  EXPECT_EQ(none.high, 0.0);
}

TEST(AbTable, RowWithRatio) {
  EXPECT_EQ(metric_row("writes", {50, 50, 50}, {25, 20, 30}),
            "writes                             50 [50-50]           25 [20-30]        0.5\n");
  EXPECT_EQ(metric_row("idle restarts", {0, 0, 0}, {3, 3, 3}),
            "idle restarts                       0 [0-0]            3 [3-3]          -\n");
}

}  // namespace
}  // namespace tcptune::cli
