// The hand-over between the answering and the records thread: bounded, never blocking the
// answering side, closing every duplicate it drops.
#include "follow_up_queue.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <thread>

namespace tcptune::supervisor {
namespace {

using std::chrono::milliseconds;

FollowUp holding(int fd, pid_t thread = 1) {
  FollowUp follow_up;
  follow_up.socket = OwnedFd(fd);
  follow_up.thread = thread;
  return follow_up;
}

bool is_open(int fd) {
  return fcntl(fd, F_GETFD) != -1;
}

TEST(FollowUpQueue, HandsOverInOrderAndEndsOnceClosedAndDrained) {
  FollowUpQueue queue;
  EXPECT_TRUE(queue.push(holding(-1, 1)));
  EXPECT_TRUE(queue.push(holding(-1, 2)));
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
    (void)queue.push(holding(-1, 7));
  });
  // A timeout ten thousand times the push's delay: only the push ends this wait in time.
  const auto started = std::chrono::steady_clock::now();
  const auto taken = queue.take(std::chrono::milliseconds(200'000));
  pusher.join();
  ASSERT_TRUE(taken.has_value());
  ASSERT_EQ(taken->size(), 1U);
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(20));
}

TEST(FollowUpQueue, BeyondItsBoundAFollowUpIsDroppedCountedAndItsDuplicateClosed) {
  FollowUpQueue queue;
  for (std::size_t i = 0; i < FollowUpQueue::kMostWaiting; ++i) {
    ASSERT_TRUE(queue.push(holding(-1)));
  }
  const int duplicate = open("/dev/null", O_RDONLY | O_CLOEXEC);
  ASSERT_GE(duplicate, 0);
  EXPECT_FALSE(queue.push(holding(duplicate)));
  EXPECT_FALSE(is_open(duplicate)) << "a dropped follow-up holds no descriptor";
  EXPECT_EQ(queue.dropped(), 1U);
}

TEST(FollowUpQueue, DeepOnceEnoughWaitToHoldNoMoreSockets) {
  FollowUpQueue queue;
  for (std::size_t i = 0; i < FollowUpQueue::kMostHoldingSockets; ++i) {
    EXPECT_FALSE(queue.deep()) << i;
    ASSERT_TRUE(queue.push(holding(-1)));
  }
  EXPECT_TRUE(queue.deep());
  (void)queue.take(milliseconds(0));
  EXPECT_FALSE(queue.deep());
}

TEST(FollowUpQueue, AbandonedItDropsWhatWaitsAndWhatComes) {
  FollowUpQueue queue;
  const int waiting = open("/dev/null", O_RDONLY | O_CLOEXEC);
  ASSERT_GE(waiting, 0);
  ASSERT_TRUE(queue.push(holding(waiting)));
  queue.abandon();
  EXPECT_FALSE(is_open(waiting));
  EXPECT_FALSE(queue.push(holding(-1)));
  EXPECT_EQ(queue.dropped(), 2U);
}

}  // namespace
}  // namespace tcptune::supervisor
