// The hand-over from the supervisor's answering thread to its records thread. The answering
// thread never waits for the records thread: beyond kMostWaiting (memory: about a kilobyte
// each) a follow-up is dropped (its records are lost, the program is not affected) and
// counted.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <vector>

#include "follow_up.hpp"

namespace tcptune::supervisor {

class FollowUpQueue {
 public:
  static constexpr std::size_t kMostWaiting = 8192;
  static constexpr std::chrono::milliseconds kGatherFor{5};

  // False (and the follow-up dropped) when kMostWaiting wait already.
  bool push(FollowUp follow_up);
  // What waits, after waiting for something at most kGatherFor without being woken, then at
  // most `timeout` more (possibly nothing); nullopt once closed and drained.
  std::optional<std::vector<FollowUp>> take(std::chrono::milliseconds timeout);
  // No more follow-ups: take returns what is left without waiting, then nullopt.
  void close();
  // The records thread has stopped: what waits is dropped, and so is every later follow-up.
  void abandon() noexcept;
  // Whether it has (its thread then looks for exits no more either).
  [[nodiscard]] bool abandoned() const noexcept { return abandoned_.load(std::memory_order_relaxed); }
  [[nodiscard]] std::uint64_t dropped() const;

 private:
  mutable std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<FollowUp> waiting_;
  bool closed_ = false;
  std::atomic<bool> abandoned_{false};
  bool idle_ = false;  // the taker waits to be woken
  std::uint64_t dropped_ = 0;
};

}  // namespace tcptune::supervisor
