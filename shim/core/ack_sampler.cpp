#include "ack_sampler.hpp"

#include <linux/sockios.h>
#include <sys/ioctl.h>

#include <algorithm>

#include "fd_table.hpp"
#include "histogram_layout.hpp"

namespace tcptune::shim {

namespace {

// How often statistics of closed connections are looked for. A connection's conn_close takes
// them within milliseconds of its close; one whose record was lost never does, so what two
// sweeps in a row find closed is dropped (memory stays bounded under any close rate).
constexpr std::int64_t kAckSweepNs = 1'000'000'000;

bool still_open(int fd, std::uint32_t generation) {
  const SocketSlot* slot = fd_table().find(fd);
  return slot != nullptr && slot->generation.load(std::memory_order_acquire) == generation;
}

}  // namespace

// ioctl(SIOCOUTQ) gives the bytes written and not yet acknowledged, so the bytes acknowledged
// are the bytes written minus that.
void AckSampler::poll(std::int64_t now_ns) {
  for (std::size_t i = 0; i < outstanding_.size();) {
    AckSample& sample = outstanding_[i];
    SocketSlot* slot = fd_table().find(sample.fd);
    bool done = slot == nullptr || slot->generation.load(std::memory_order_acquire) != sample.generation;
    if (!done) {
      const std::uint64_t written = slot->stats.counters.bytes.load(std::memory_order_acquire);  // before the ioctl
      int unacked = 0;
      if (ioctl(sample.fd, SIOCOUTQ, &unacked) != 0 ||
          slot->generation.load(std::memory_order_acquire) != sample.generation) {
        done = true;  // closed (or reused) meanwhile: no sample
      } else if (written - static_cast<std::uint64_t>(unacked) >= sample.bytes_after) {
        Stats& stats = stats_[{sample.fd, sample.generation}];
        if (!sample.seen_unacked) {
          ++stats.acked_before_first_poll;
        } else {
          // Clamped: the write's end came from the write clock, which may lead by microseconds.
          const auto latency = static_cast<std::uint64_t>(std::max<std::int64_t>(now_ns - sample.write_end_ns, 0));
          ++stats.buckets[telemetry::HistogramLayout::bucket_of(latency)];
          stats.max_ns = std::max(stats.max_ns, latency);
          stats.sum_ns += latency;
        }
        done = true;
      } else {
        sample.seen_unacked = true;
      }
      if (done) {
        slot->stats.ack_sample_outstanding.store(false, std::memory_order_release);
      }
    }
    if (done) {
      outstanding_[i] = outstanding_.back();
      outstanding_.pop_back();
    } else {
      ++i;
    }
  }
}

void AckSampler::sweep_closed(std::int64_t now_ns) {
  if (now_ns < next_sweep_ns_) {
    return;
  }
  next_sweep_ns_ = now_ns + kAckSweepNs;
  for (auto entry = stats_.begin(); entry != stats_.end();) {
    const bool closed = !still_open(entry->first.first, entry->first.second);
    if (closed && entry->second.seen_closed) {
      entry = stats_.erase(entry);
    } else {
      entry->second.seen_closed = closed;
      ++entry;
    }
  }
}

void AckSampler::add_to(const Stats& stats, telemetry::AckLatency& into) {
  for (const auto& [bucket, count] : stats.buckets) {
    into.histogram.add(bucket, count);
  }
  into.histogram.observe_range(0, stats.max_ns);
  into.acked_before_first_poll += stats.acked_before_first_poll;
  into.sum_ns += stats.sum_ns;
}

telemetry::AckLatency AckSampler::take(int fd, std::uint32_t generation) {
  telemetry::AckLatency out;
  if (const auto found = stats_.find({fd, generation}); found != stats_.end()) {
    add_to(found->second, out);
    stats_.erase(found);
  }
  return out;
}

void AckSampler::add_open_to(int fd, std::uint32_t generation, telemetry::AckLatency& into) const {
  if (const auto found = stats_.find({fd, generation}); found != stats_.end()) {
    add_to(found->second, into);
  }
}

}  // namespace tcptune::shim
