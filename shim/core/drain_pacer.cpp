#include "drain_pacer.hpp"

#include <algorithm>

#include "worker_thread.hpp"

namespace tcptune::shim {

std::int64_t DrainPacer::next_due(std::int64_t now_ns, std::size_t taken) noexcept {
  const std::int64_t since = now_ns - last_drain_ns_;
  const bool first = last_drain_ns_ == 0;
  last_drain_ns_ = now_ns;
  // A few events per wake-up: the idle timeout or an app thread's wake-up is soon enough.
  if (first || since <= 0 || taken < wake_at_events_ / 8) {
    return kDueWhenWoken;
  }
  const auto half_backlog = static_cast<std::int64_t>(wake_at_events_ / 2);
  const std::int64_t fill_ns = since * half_backlog / static_cast<std::int64_t>(taken);
  return now_ns + std::max(fill_ns, kShortestPaceNs);
}

}  // namespace tcptune::shim
