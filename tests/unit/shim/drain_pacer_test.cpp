#include "drain_pacer.hpp"

#include <gtest/gtest.h>

#include "worker_thread.hpp"

namespace tcptune::shim {
namespace {

constexpr std::size_t kWakeAt = 256;
constexpr std::int64_t kMs = 1'000'000;

TEST(DrainPacer, TheFirstDrainWaitsToBeWoken) {
  DrainPacer pacer(kWakeAt);
  EXPECT_EQ(pacer.next_due(5 * kMs, 1000), kDueWhenWoken);  // no rate yet
}

TEST(DrainPacer, AFewEventsWaitToBeWoken) {
  DrainPacer pacer(kWakeAt);
  (void)pacer.next_due(1 * kMs, 0);
  EXPECT_EQ(pacer.next_due(21 * kMs, kWakeAt / 8 - 1), kDueWhenWoken);
}

TEST(DrainPacer, AtAFastRateDueWhenHalfTheWakeBacklogHasArrived) {
  DrainPacer pacer(kWakeAt);
  (void)pacer.next_due(10 * kMs, 0);
  // 256 events in 2 ms: 128 more take 1 ms.
  EXPECT_EQ(pacer.next_due(12 * kMs, 256), 13 * kMs);
  // Then 128 in that millisecond: the same pace.
  EXPECT_EQ(pacer.next_due(13 * kMs, 128), 14 * kMs);
}

TEST(DrainPacer, NeverSoonerThanTheShortestPace) {
  DrainPacer pacer(kWakeAt);
  (void)pacer.next_due(10 * kMs, 0);
  EXPECT_EQ(pacer.next_due(10 * kMs + 10'000, 1000), 10 * kMs + 10'000 + DrainPacer::kShortestPaceNs);
}

TEST(DrainPacer, AClockThatDidNotMoveWaitsToBeWoken) {
  DrainPacer pacer(kWakeAt);
  (void)pacer.next_due(10 * kMs, 0);
  EXPECT_EQ(pacer.next_due(10 * kMs, 500), kDueWhenWoken);
}

}  // namespace
}  // namespace tcptune::shim
