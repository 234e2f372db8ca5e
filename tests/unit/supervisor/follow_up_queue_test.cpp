// The hand-over between the answering and the records thread: bounded, never blocking the
// answering side.
#include "follow_up_queue.hpp"

#include <gtest/gtest.h>

#include <thread>

namespace tcptune::supervisor {
namespace {

using std::chrono::milliseconds;

FollowUp from(pid_t thread) {
  FollowUp follow_up;
  follow_up.thread = thread;
  return follow_up;
}

TEST(FollowUpQueue, HandsOverInOrderAndEndsOnceClosedAndDrained) {
  FollowUpQueue queue;
  EXPECT_TRUE(queue.push(from(1)));
  EXPECT_TRUE(queue.push(from(2)));
  queue.close();
  const auto taken = queue.take(milliseconds(0));
  ASSERT_TRUE(taken.has_value());
  ASSERT_EQ(taken->size(), 2U);
  EXPECT_EQ((*taken)[0].thread, 1);
  EXPECT_EQ((*taken)[1].thread, 2);
  EXPECT_FALSE(queue.take(milliseconds(0)).has_value()) << "closed and drained";
}

TEST(FollowUpQueue, TakeWaitsAtMostItsTimeoutAndWakesOnAPush) {
  FollowUpQueue queue;
  const auto empty = queue.take(milliseconds(1));
  ASSERT_TRUE(empty.has_value());
  EXPECT_TRUE(empty->empty());
  std::thread pusher([&queue] {
    std::this_thread::sleep_for(milliseconds(20));
    (void)queue.push(from(7));
  });
  // A timeout ten thousand times the push's delay: only the push ends this wait in time.
  const auto started = std::chrono::steady_clock::now();
  const auto taken = queue.take(std::chrono::milliseconds(200'000));
  pusher.join();
  ASSERT_TRUE(taken.has_value());
  ASSERT_EQ(taken->size(), 1U);
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(20));
}

TEST(FollowUpQueue, BeyondItsBoundAFollowUpIsDroppedAndCounted) {
  FollowUpQueue queue;
  for (std::size_t i = 0; i < FollowUpQueue::kMostWaiting; ++i) {
    ASSERT_TRUE(queue.push(from(1)));
  }
  EXPECT_FALSE(queue.push(from(2)));
  EXPECT_EQ(queue.dropped(), 1U);
  const auto taken = queue.take(milliseconds(0));
  ASSERT_TRUE(taken.has_value());
  EXPECT_EQ(taken->size(), FollowUpQueue::kMostWaiting);
  EXPECT_EQ(taken->back().thread, 1) << "the one dropped is the one that came last";
}

TEST(FollowUpQueue, AbandonedItDropsWhatWaitsAndWhatComes) {
  FollowUpQueue queue;
  ASSERT_TRUE(queue.push(from(1)));
  queue.abandon();
  EXPECT_FALSE(queue.push(from(2)));
  EXPECT_EQ(queue.dropped(), 2U);
  const auto taken = queue.take(milliseconds(0));
  EXPECT_TRUE(!taken.has_value() || taken->empty());
}

}  // namespace
}  // namespace tcptune::supervisor
