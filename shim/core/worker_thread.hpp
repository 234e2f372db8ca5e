// The shim's one background thread. On each wake-up it runs its tasks in order, then sleeps
// (futex) until the earliest one is due, at most kIdleSleepNs, or until woken. The tasks (the
// telemetry events, ack sampling, the Prometheus textfile, keep-warm scheduling) do not know
// one another; the thread knows none of them.
#pragma once

#include <pthread.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <limits>
#include <vector>

namespace tcptune::shim {

// How long the thread sleeps when no task is due sooner.
inline constexpr std::int64_t kIdleSleepNs = 20'000'000;
// What a task returns when it needs to run again only once the thread is woken.
inline constexpr std::int64_t kDueWhenWoken = std::numeric_limits<std::int64_t>::max();

class WorkerThread {
 public:
  // Does what is due at now_ns (monotonic) and returns when it next needs to run, or
  // kDueWhenWoken. An exception ends that task's turn, not the thread.
  using Task = std::function<std::int64_t(std::int64_t now_ns)>;

  // Starts the thread with every signal blocked (the app's signals are the app's), named
  // "tcptune"; it runs on_start once, then the tasks. False if it could not be created.
  bool start(std::function<void()> on_start, std::vector<Task> tasks) noexcept;
  // Wakes the thread if it is sleeping: at most one futex wake per sleep. Async-signal-safe,
  // preserves errno.
  void wake_if_sleeping() noexcept;
  // Ends the loop after the current wake-up and joins the thread.
  void stop() noexcept;
  // Fork child: the thread does not exist there.
  void forget_in_child() noexcept;

 private:
  static void* run(void* self);
  void sleep(std::uint32_t seen, std::int64_t ns) noexcept;

  std::function<void()> on_start_;
  std::vector<Task> tasks_;
  std::atomic<bool> running_{false};
  std::atomic<std::uint32_t> wake_{0};
  std::atomic<bool> sleeping_{false};
  pthread_t thread_{};
};

}  // namespace tcptune::shim
