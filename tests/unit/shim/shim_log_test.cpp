// The log's fork handlers must cover every lock on the setup paths: a lock another thread
// holds at fork() stays locked forever in the child.
#include "shim_log.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

namespace tcptune::shim {
namespace {

TEST(ShimLog, FirstTimeIsTrueOncePerKey) {
  EXPECT_TRUE(log_first_time("rule a/congestion"));
  EXPECT_FALSE(log_first_time("rule a/congestion"));
  EXPECT_TRUE(log_first_time("rule b/congestion"));
}

TEST(ShimLog, ForkPrepareHoldsTheOnceSet) {
  log_prepare_fork();  // what pthread_atfork's prepare handler does just before fork()
  std::atomic<bool> returned{false};
  std::thread other([&] {
    (void)log_first_time("fork test key");
    returned.store(true);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(returned.load()) << "the once-set was usable while the fork handler held the log";
  log_after_fork();
  other.join();
  EXPECT_TRUE(returned.load());
}

}  // namespace
}  // namespace tcptune::shim
