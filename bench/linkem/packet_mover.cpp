#include "packet_mover.hpp"

#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <unistd.h>
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>

#include "link_json.hpp"

namespace tcptune::linkem {

namespace {

// Reads per readiness event and writes per pass: bounded so that neither direction nor due deliveries
// wait long behind the other (32 packets are about 100 us of work here).
constexpr int kReadBatch = 32;
constexpr int kWriteBatch = 64;
constexpr int kMaxEvents = 8;
// Spinning is the only way to hit a deadline within microseconds on a VM whose wake-ups take 50-400 us,
// but it burns a core: at most this long, only right before a packet is due.
constexpr std::int64_t kMaxSpinNs = 50000;
constexpr std::int64_t kMaxWakeEarlyNs = 300000;
// Spinning is also rationed to a tenth of the time (a token bucket): at high packet rates the gaps
// between deadlines are shorter than the spin limit, and spinning through all of them would take the
// whole core (and then the kernel's fair-server throttling stops a SCHED_FIFO task for 50 ms).
constexpr std::int64_t kSpinShareDivisor = 10;
constexpr std::int64_t kSpinBurstNs = 2000000;

// Seeds of the two directions: distinct streams from one --seed.
constexpr std::uint64_t kSecondLaneSeedOffset = 0x9e3779b97f4a7c15ULL;

}  // namespace

std::int64_t monotonic_ns() {
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<std::int64_t>(now.tv_sec) * 1000000000 + now.tv_nsec;
}

PacketMover::PacketMover(const LinkConfig& config, const Fds& fds, StatusJson status_json)
    : fds_(fds),
      status_json_(std::move(status_json)),
      pool_(kPoolSlots),
      lanes_{Lane(config.a_to_b, config.seed, fds.tun_a, fds.tun_b),
             Lane(config.b_to_a, config.seed + kSecondLaneSeedOffset, fds.tun_b, fds.tun_a)} {}

PacketMover::~PacketMover() {
  if (epoll_fd_ >= 0) {
    close(epoll_fd_);
  }
}

bool PacketMover::init(std::string& error) {
  if (!pool_.valid()) {
    error = "cannot map the packet pool";
    return false;
  }
  epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
  if (epoll_fd_ < 0) {
    error = std::string("epoll_create1: ") + std::strerror(errno);
    return false;
  }
  for (const int fd : {fds_.tun_a, fds_.tun_b, fds_.control, fds_.signals}) {
    epoll_event event{};
    event.events = EPOLLIN;
    event.data.fd = fd;
    if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &event) != 0) {
      error = std::string("epoll_ctl: ") + std::strerror(errno);
      return false;
    }
  }
  return true;
}

void PacketMover::read_batch(Lane& lane) {
  static std::uint8_t overflow[PacketSlot::kPayloadBytes];
  for (int i = 0; i < kReadBatch; ++i) {
    const bool have_slot = !pool_.exhausted();
    PacketSlot* slot = have_slot ? &pool_.slot(pool_.peek_free()) : nullptr;
    std::uint8_t* buffer = have_slot ? slot->data : overflow;
    const ssize_t n = read(lane.in_fd, buffer, PacketSlot::kPayloadBytes);
    if (n < 0) {
      if (errno == EINTR) {
        continue;
      }
      if (errno != EAGAIN) {
        (void)std::fprintf(stderr, "linkem: read from TUN: %s\n", std::strerror(errno));
      }
      return;
    }
    ++lane.counters.packets_in;
    if (!have_slot) {
      ++lane.counters.drops_pool;
      continue;
    }
    const Decision decision = lane.model.admit(monotonic_ns(), static_cast<std::uint32_t>(n));
    switch (decision.verdict) {
      case Verdict::kQueueDrop: ++lane.counters.drops_queue; break;
      case Verdict::kLossDrop: ++lane.counters.drops_loss; break;
      case Verdict::kDeliver:
        slot->deliver_at_ns = decision.deliver_at_ns;
        slot->length = static_cast<std::uint32_t>(n);
        lane.fifo.push(pool_.acquire());
        break;
    }
  }
}

PacketMover::Lane* PacketMover::earliest_lane() {
  Lane* earliest = nullptr;
  for (Lane& lane : lanes_) {
    if (!lane.fifo.empty() && (earliest == nullptr || pool_.slot(lane.fifo.front()).deliver_at_ns <
                                                          pool_.slot(earliest->fifo.front()).deliver_at_ns)) {
      earliest = &lane;
    }
  }
  return earliest;
}

void PacketMover::deliver_due() {
  std::int64_t now = monotonic_ns();
  for (int i = 0; i < kWriteBatch; ++i) {
    Lane* lane = earliest_lane();
    if (lane == nullptr) {
      return;
    }
    const std::uint32_t index = lane->fifo.front();
    const PacketSlot& slot = pool_.slot(index);
    if (slot.deliver_at_ns > now) {
      return;
    }
    const ssize_t n = write(lane->out_fd, slot.data, slot.length);
    const std::int64_t lateness = now - slot.deliver_at_ns;
    DirectionCounters& counters = lane->counters;
    if (n == static_cast<ssize_t>(slot.length)) {
      ++counters.packets;
      counters.bytes += slot.length;
      counters.count_lateness(std::max<std::int64_t>(0, lateness));
    } else {
      ++counters.write_errors;
    }
    lane->fifo.pop();
    pool_.release(index);
    now = monotonic_ns();
  }
}

void PacketMover::serve_control() {
  for (;;) {
    const int client = accept4(fds_.control, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (client < 0) {
      return;
    }
    const std::string reply = status_json_(lanes_[0].counters, lanes_[1].counters) + "\n";
    // A status line is far smaller than a socket buffer: one nonblocking write suffices.
    (void)!write(client, reply.data(), reply.size());
    close(client);
  }
}

bool PacketMover::may_spin(std::int64_t now_ns, std::int64_t spin_ns) {
  spin_tokens_ns_ = std::min(kSpinBurstNs, spin_tokens_ns_ + (now_ns - spin_refilled_ns_) / kSpinShareDivisor);
  spin_refilled_ns_ = now_ns;
  return spin_ns <= spin_tokens_ns_;
}

void PacketMover::spin_until(std::int64_t deadline_ns) {
  const std::int64_t start = monotonic_ns();
  std::int64_t now = start;
  while (now < deadline_ns) {
    now = monotonic_ns();
  }
  spin_tokens_ns_ -= now - start;
}

std::int64_t PacketMover::sleep_budget(std::int64_t deadline_ns, std::int64_t now_ns) {
  const std::int64_t remaining = deadline_ns - now_ns;
  if (remaining <= 0 || (remaining <= kMaxSpinNs && may_spin(now_ns, remaining))) {
    return 0;
  }
  if (remaining <= kMaxSpinNs) {
    return remaining;  // out of spin tokens: sleep and accept the wake-up latency
  }
  // Wake up early by the usual wake-up latency; if that already happened, sleep to just within spin range.
  const std::int64_t sleep_ns = remaining - wake_early_ns_;
  return sleep_ns > 0 ? sleep_ns : remaining - kMaxSpinNs;
}

void PacketMover::learn_wake_latency(std::int64_t overshoot_ns) {
  // Tracks the 20th percentile of the overshoot (a stochastic quantile estimate): waking that much early
  // makes most wake-ups late by less, while only the fastest fifth arrive early and spin.
  constexpr std::int64_t kStepNs = 5000;
  if (overshoot_ns < wake_early_ns_) {
    wake_early_ns_ -= kStepNs * 4 / 5;
  } else {
    wake_early_ns_ += kStepNs / 5;
  }
  wake_early_ns_ = std::clamp<std::int64_t>(wake_early_ns_, 0, kMaxWakeEarlyNs);
}

int PacketMover::run() {
  epoll_event events[kMaxEvents];
  while (stop_signal_ == 0) {
    deliver_due();
    const Lane* next = earliest_lane();
    timespec timeout{};
    timespec* timeout_or_forever = nullptr;
    std::int64_t deadline_ns = 0;
    std::int64_t wake_at_ns = 0;  // when the sleep is due to end, to learn how late wake-ups come
    if (next != nullptr) {
      deadline_ns = pool_.slot(next->fifo.front()).deliver_at_ns;
      const std::int64_t now = monotonic_ns();
      const std::int64_t sleep_ns = sleep_budget(deadline_ns, now);
      if (sleep_ns == 0) {
        // Due within the spin limit: a sleep this short would wake up later than spinning does.
        // Then poll input without waiting, and deliver at the top of the loop.
        spin_until(deadline_ns);
      }
      wake_at_ns = now + sleep_ns;
      timeout.tv_sec = sleep_ns / 1000000000;
      timeout.tv_nsec = sleep_ns % 1000000000;
      timeout_or_forever = &timeout;
    }
    const int ready = epoll_pwait2(epoll_fd_, events, kMaxEvents, timeout_or_forever, nullptr);
    if (ready < 0) {
      if (errno != EINTR) {
        (void)std::fprintf(stderr, "linkem: epoll_pwait2: %s\n", std::strerror(errno));
        return 0;
      }
      continue;
    }
    if (ready == 0 && next != nullptr) {
      const std::int64_t now = monotonic_ns();
      if (timeout.tv_sec != 0 || timeout.tv_nsec != 0) {
        learn_wake_latency(now - wake_at_ns);
      }
      if (deadline_ns - now <= kMaxSpinNs && may_spin(now, deadline_ns - now)) {
        spin_until(deadline_ns);
      }
    }
    for (int i = 0; i < ready; ++i) {
      const int fd = events[i].data.fd;
      if (fd == fds_.tun_a) {
        read_batch(lanes_[0]);
      } else if (fd == fds_.tun_b) {
        read_batch(lanes_[1]);
      } else if (fd == fds_.control) {
        serve_control();
      } else if (fd == fds_.signals) {
        signalfd_siginfo info{};
        if (read(fds_.signals, &info, sizeof info) == static_cast<ssize_t>(sizeof info)) {
          stop_signal_ = static_cast<int>(info.ssi_signo);
        }
      }
      // Due packets go out between the events of one wake-up too, not only after all of them.
      deliver_due();
    }
  }
  return stop_signal_;
}

}  // namespace tcptune::linkem
