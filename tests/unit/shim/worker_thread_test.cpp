// The background thread on its own: its tasks run in order on the thread it names, a task
// that throws loses its turn and nothing else, and stop() ends the loop for good.
#include "worker_thread.hpp"

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <limits>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace tcptune::shim {
namespace {

constexpr std::int64_t kWhenWoken = std::numeric_limits<std::int64_t>::max();

bool wait_until(const std::function<bool()>& condition) {
  for (int i = 0; i < 500 && !condition(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return condition();
}

TEST(WorkerThread, RunsItsTasksInOrderOnANamedThreadWithSignalsBlocked) {
  WorkerThread thread;
  std::mutex lock;
  std::vector<int> order;
  std::string name;
  bool sigterm_blocked = false;
  std::atomic<int> starts{0};
  ASSERT_TRUE(thread.start(
      [&] {
        ++starts;
        char buffer[16] = {};
        pthread_getname_np(pthread_self(), buffer, sizeof buffer);
        sigset_t mask;
        pthread_sigmask(SIG_SETMASK, nullptr, &mask);
        const std::lock_guard<std::mutex> guard(lock);
        name = buffer;
        sigterm_blocked = sigismember(&mask, SIGTERM) == 1;
      },
      {[&](std::int64_t /*now*/) {
         const std::lock_guard<std::mutex> guard(lock);
         order.push_back(1);
         return kWhenWoken;
       },
       [&](std::int64_t now) {
         const std::lock_guard<std::mutex> guard(lock);
         order.push_back(2);
         return now + 1'000'000;  // due again in 1 ms
       }}));
  EXPECT_TRUE(wait_until([&] {
    const std::lock_guard<std::mutex> guard(lock);
    return order.size() >= 6;
  }));
  thread.stop();
  const std::lock_guard<std::mutex> guard(lock);
  EXPECT_EQ(starts.load(), 1);
  EXPECT_EQ(name, "tcptune");
  EXPECT_TRUE(sigterm_blocked) << "the app's signals are not delivered to the worker";
  for (std::size_t i = 0; i + 1 < order.size(); i += 2) {
    EXPECT_EQ(order[i], 1);
    EXPECT_EQ(order[i + 1], 2);
  }
}

TEST(WorkerThread, ATaskThatThrowsLosesItsTurnOnly) {
  WorkerThread thread;
  std::atomic<int> after{0};
  ASSERT_TRUE(thread.start(nullptr, {[](std::int64_t) -> std::int64_t { throw std::runtime_error("out of memory"); },
                                     [&](std::int64_t now) {
                                       ++after;
                                       return now + 1'000'000;
                                     }}));
  EXPECT_TRUE(wait_until([&] { return after.load() >= 3; }));
  thread.stop();
}

TEST(WorkerThread, StopEndsTheLoopAndCanBeCalledTwice) {
  WorkerThread thread;
  std::atomic<int> runs{0};
  ASSERT_TRUE(thread.start(nullptr, {[&](std::int64_t now) {
                             ++runs;
                             return now + 1'000'000;
                           }}));
  EXPECT_TRUE(wait_until([&] { return runs.load() >= 1; }));
  thread.stop();
  const int at_stop = runs.load();
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(runs.load(), at_stop) << "no task runs after stop()";
  thread.stop();
  thread.wake_if_sleeping();  // harmless once stopped
}

}  // namespace
}  // namespace tcptune::shim
