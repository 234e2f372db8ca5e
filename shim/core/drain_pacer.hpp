// When the telemetry worker next drains its ring, as its own choice. While events arrive fast,
// it wakes itself about when half the backlog that would make an app thread wake it has built
// up, so that app threads seldom pay for that wake-up (a futex wake and the wakee's
// interrupt: 9 to 20 us of the app thread's time each on the development VM); while they
// trickle, it sleeps until woken, or until its idle timeout.
#pragma once

#include <cstddef>
#include <cstdint>

namespace tcptune::shim {

class DrainPacer {
 public:
  // Past this many wake-ups a second the worker's own timer costs more than it saves.
  static constexpr std::int64_t kShortestPaceNs = 200'000;

  // `wake_at_events`: the backlog at which an app thread wakes the worker.
  explicit DrainPacer(std::size_t wake_at_events) noexcept : wake_at_events_(wake_at_events) {}

  // After a drain at `now_ns` that took `taken` events: when the next should run, or
  // kDueWhenWoken (worker_thread.hpp). The rate is the events taken over the time since the previous drain.
  std::int64_t next_due(std::int64_t now_ns, std::size_t taken) noexcept;

 private:
  std::size_t wake_at_events_;
  std::int64_t last_drain_ns_ = 0;
};

}  // namespace tcptune::shim
