#include "follow_up_queue.hpp"

#include <iterator>

namespace tcptune::supervisor {

bool FollowUpQueue::push(FollowUp follow_up) {
  bool wake = false;
  {
    const std::lock_guard lock(mutex_);
    if (abandoned_ || waiting_.size() >= kMostWaiting) {
      ++dropped_;
      return false;
    }
    waiting_.push_back(std::move(follow_up));
    wake = idle_;
  }
  if (wake) {
    ready_.notify_one();
  }
  return true;
}

std::optional<std::vector<FollowUp>> FollowUpQueue::take(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  const auto ready = [this] { return closed_ || !waiting_.empty(); };
  // Just after a batch the next is gathered for kGatherFor, unwoken: a busy program's calls
  // then cost no wake-up each. Only after a quiet spell does a push wake the taker.
  if (!ready_.wait_for(lock, kGatherFor, ready)) {
    idle_ = true;
    ready_.wait_for(lock, timeout, ready);
    idle_ = false;
  }
  if (closed_ && waiting_.empty()) {
    return std::nullopt;
  }
  std::vector<FollowUp> taken(std::make_move_iterator(waiting_.begin()), std::make_move_iterator(waiting_.end()));
  waiting_.clear();
  return taken;
}

void FollowUpQueue::close() {
  {
    const std::lock_guard lock(mutex_);
    closed_ = true;
  }
  ready_.notify_one();
}

void FollowUpQueue::abandon() noexcept {
  const std::lock_guard lock(mutex_);
  abandoned_ = true;
  dropped_ += waiting_.size();
  waiting_.clear();
}

std::uint64_t FollowUpQueue::dropped() const {
  const std::lock_guard lock(mutex_);
  return dropped_;
}

}  // namespace tcptune::supervisor
