#include "link_model.hpp"

#include <algorithm>

namespace tcptune::linkem {

namespace {

std::uint64_t splitmix64(std::uint64_t& x) {
  std::uint64_t z = (x += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

std::uint64_t rotl(std::uint64_t x, int k) {
  return (x << k) | (x >> (64 - k));
}

constexpr std::uint64_t kNsPerSecond = 1000000000ULL;

}  // namespace

Rng::Rng(std::uint64_t seed) {
  for (std::uint64_t& word : state_) {
    word = splitmix64(seed);
  }
}

std::uint64_t Rng::next() {
  const std::uint64_t result = rotl(state_[1] * 5, 7) * 9;
  const std::uint64_t t = state_[1] << 17;
  state_[2] ^= state_[0];
  state_[3] ^= state_[1];
  state_[1] ^= state_[2];
  state_[0] ^= state_[3];
  state_[2] ^= t;
  state_[3] = rotl(state_[3], 45);
  return result;
}

double Rng::uniform() {
  return static_cast<double>(next() >> 11) * 0x1.0p-53;
}

DirectionModel::DirectionModel(const LinkParams& params, std::uint64_t seed)
    : params_(params), rng_(seed), waiting_starts_(std::max<std::uint32_t>(params.queue_packets, 1)) {}

void DirectionModel::forget_started(std::int64_t now_ns) {
  while (waiting_count_ > 0 && waiting_starts_[waiting_head_] <= now_ns) {
    waiting_head_ = (waiting_head_ + 1) % waiting_starts_.size();
    --waiting_count_;
  }
}

std::uint32_t DirectionModel::waiting(std::int64_t now_ns) {
  forget_started(now_ns);
  return static_cast<std::uint32_t>(waiting_count_);
}

Decision DirectionModel::admit(std::int64_t now_ns, std::uint32_t ip_bytes) {
  if (!started_) {
    // The first packet starts every clock; before it the link was idle forever.
    last_departure_ns_ = now_ns;
    last_delivery_ns_ = now_ns;
    started_ = true;
  }
  std::int64_t departure_ns = now_ns;
  if (params_.rate_bps > 0) {
    forget_started(now_ns);
    if (waiting_count_ >= params_.queue_packets) {
      return {Verdict::kQueueDrop, 0};
    }
    std::int64_t start_ns = last_departure_ns_;
    if (now_ns >= start_ns) {
      // The link went idle: fractional leftovers of the previous packet do not carry over.
      start_ns = now_ns;
      departure_remainder_ = 0;
    } else {
      waiting_starts_[(waiting_head_ + waiting_count_) % waiting_starts_.size()] = start_ns;
      ++waiting_count_;
    }
    const std::uint64_t numerator = std::uint64_t{ip_bytes} * 8 * kNsPerSecond + departure_remainder_;
    departure_ns = start_ns + static_cast<std::int64_t>(numerator / params_.rate_bps);
    departure_remainder_ = numerator % params_.rate_bps;
    last_departure_ns_ = departure_ns;
  }
  // A lost packet has used its share of the link (it was corrupted on the wire, not refused by the queue).
  if (params_.loss_pct > 0 && rng_.uniform() * 100.0 < params_.loss_pct) {
    return {Verdict::kLossDrop, 0};
  }
  std::int64_t delay_ns = params_.delay_ns;
  if (params_.jitter_ns > 0) {
    const double offset = (rng_.uniform() * 2.0 - 1.0) * static_cast<double>(params_.jitter_ns);
    delay_ns = std::max<std::int64_t>(0, delay_ns + static_cast<std::int64_t>(offset));
  }
  const std::int64_t deliver_at_ns = std::max(departure_ns + delay_ns, last_delivery_ns_);
  last_delivery_ns_ = deliver_at_ns;
  return {Verdict::kDeliver, deliver_at_ns};
}

}  // namespace tcptune::linkem
