#include "idle_restart.hpp"

#include <gtest/gtest.h>

namespace tcptune::shim {
namespace {

TEST(SlowStartRoundTrips, WindowDoublesEachRound) {
  EXPECT_EQ(slow_start_round_trips(1, 10), 1U);
  EXPECT_EQ(slow_start_round_trips(10, 10), 1U);
  EXPECT_EQ(slow_start_round_trips(11, 10), 2U);  // 10, then 20
  EXPECT_EQ(slow_start_round_trips(30, 10), 2U);
  EXPECT_EQ(slow_start_round_trips(42, 10), 3U);   // a 60 KB message from the initial window
  EXPECT_EQ(slow_start_round_trips(42, 135), 1U);  // the same from a warm window
  EXPECT_EQ(slow_start_round_trips(42, 33), 2U);   // after two halvings
  EXPECT_EQ(slow_start_round_trips(5, 0), 3U);     // a zero window is treated as one segment
}

}  // namespace
}  // namespace tcptune::shim
