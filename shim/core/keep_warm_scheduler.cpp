#include "keep_warm_scheduler.hpp"

#include <linux/sockios.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <limits>

#include "errno_saver.hpp"
#include "fd_table.hpp"
#include "next_symbols.hpp"
#include "tcptune/config/rule_matcher.hpp"

namespace tcptune::shim {

namespace {

constexpr std::int64_t kShortestIntervalNs = 10'000'000;
// Linux's RTO floor (TCP_RTO_MIN).
constexpr std::int64_t kRtoFloorNs = 200'000'000;
// Until the first TCP_INFO: as for an RTO at the floor.
constexpr std::int64_t kFirstIntervalNs = kRtoFloorNs - kAutoIntervalMarginNs;
// Due connections polled together: one poll() per this many quiet candidates. Few enough that
// a FIN arriving between the poll and the last of their sends stays unlikely (each send takes
// microseconds), many enough that the poll's own cost is shared out.
constexpr std::size_t kPollBatch = 32;
// What poll() reports that only TCP_INFO can explain (a FIN, a reset, an error or a closed
// descriptor): a full look.
constexpr short kNotQuiet = POLLRDHUP | POLLHUP | POLLERR | POLLNVAL;

// The interval in force: the configured one, or the RTO less the margin (at least 10 ms).
std::int64_t heartbeat_interval_ns(const TcpInfoSummary& info, const config::KeepWarm& settings) noexcept {
  if (settings.interval) {
    return std::max<std::int64_t>(settings.interval->count(), kShortestIntervalNs);
  }
  return std::max<std::int64_t>(static_cast<std::int64_t>(info.rto_us) * 1000 - kAutoIntervalMarginNs,
                                kShortestIntervalNs);
}
}  // namespace

std::uint32_t window_after_restart(std::uint32_t cwnd, std::int64_t silent_ns, std::int64_t rto_ns) noexcept {
  const std::uint32_t restart = std::min(kInitialWindowSegments, cwnd);
  if (rto_ns <= 0) {
    return restart;
  }
  // tcp_cwnd_restart: while ((delta -= rto) > 0 && cwnd > restart) cwnd >>= 1;
  for (std::int64_t delta = silent_ns - rto_ns; delta > 0 && cwnd > restart; delta -= rto_ns) {
    cwnd >>= 1U;
  }
  return std::max(cwnd, restart);
}

HeartbeatDecision decide_heartbeat(const TcpInfoSummary& info, int queued, const config::KeepWarm& settings) noexcept {
  const std::int64_t interval = heartbeat_interval_ns(info, settings);
  // Not connected yet (the rule is applied before connect() sends the SYN), or never. The RTO
  // before the handshake is the kernel's 1 s default, so the interval is not waited out: the
  // app may write a burst and fall silent right after connecting, and a look a whole second
  // later would find the window's RTO already passed.
  if (info.state == TCP_CLOSE || info.state == TCP_SYN_SENT || info.state == TCP_SYN_RECV) {
    return {HeartbeatVerdict::not_yet, std::min(interval, kFirstIntervalNs), interval};
  }
  if (info.state != TCP_ESTABLISHED) {
    return {HeartbeatVerdict::stop, 0, interval};  // after a FIN a heartbeat would draw a reset
  }
  const std::int64_t since_sent = static_cast<std::int64_t>(info.last_data_sent_ms) * 1'000'000;
  const std::int64_t remaining = std::max(interval - since_sent, kShortestRecheckNs);
  if (queued > 0 || info.unacked > 0) {
    return {HeartbeatVerdict::not_yet, remaining, interval};  // in flight: no restart can happen yet
  }
  if (info.snd_cwnd <= kInitialWindowSegments) {
    return {HeartbeatVerdict::cold, interval, interval};  // a restart would not shrink it
  }
  if (window_after_restart(info.snd_cwnd, since_sent, static_cast<std::int64_t>(info.rto_us) * 1000) <=
      kInitialWindowSegments) {
    // Silent so long (a worker that fell far behind) that the next send, a heartbeat too,
    // restarts the window at the initial one: left to the app's next write, as without the shim.
    return {HeartbeatVerdict::cold, interval, interval};
  }
  // Late by less than that, the heartbeat costs the halvings the silence has earned, and
  // keeps what is left: the app's next write, after more silence, would cut deeper.
  if (since_sent + kSendEarlyNs < interval) {
    return {HeartbeatVerdict::not_yet, remaining, interval};
  }
  return {HeartbeatVerdict::send, interval, interval};
}

bool same_rto(const LastLook& reference, const TcpInfoSummary& info) noexcept {
  const std::uint32_t rtt_moved =
      info.rtt_us > reference.rtt_us ? info.rtt_us - reference.rtt_us : reference.rtt_us - info.rtt_us;
  return reference.rto_us != 0 && info.rto_us == reference.rto_us && rtt_moved <= kSettledRttUs;
}

bool quiet_allowed(std::uint8_t steady, const config::KeepWarm& settings) noexcept {
  return settings.interval.has_value() || steady >= kSettledHeartbeats;
}

std::optional<HeartbeatDecision> decide_quiet_heartbeat(const LastLook& look, std::int64_t sent_ns,
                                                        std::int64_t now_ns) noexcept {
  const std::int64_t silent = now_ns - sent_ns;
  if (window_after_restart(look.cwnd, silent, static_cast<std::int64_t>(look.rto_us) * 1000) <=
      kInitialWindowSegments) {
    return std::nullopt;  // the kernel's view decides between a late heartbeat and none
  }
  if (silent + kSendEarlyNs < look.interval_ns) {
    return HeartbeatDecision{HeartbeatVerdict::not_yet, std::max(look.interval_ns - silent, kShortestRecheckNs),
                             look.interval_ns};
  }
  return HeartbeatDecision{HeartbeatVerdict::send, look.interval_ns, look.interval_ns};
}

namespace {
// std::*_heap order: the entry due first at the front. A function object, so that the heap's
// comparisons are inlined.
struct DueLater {
  template <typename Due>
  bool operator()(const Due& a, const Due& b) const noexcept {
    return a.due_ns > b.due_ns;
  }
};
}  // namespace

void KeepWarmScheduler::add(const WarmConnection& connection, std::int64_t now_ns) {
  Connection entry{};
  entry.look.interval_ns = kFirstIntervalNs;
  entry.last_app_write_ns = now_ns;
  entry.fd = connection.fd;
  entry.generation = connection.generation;
  entry.rule_index = connection.rule_index;
  entry.marked = connection.target.marked;
  if (const SocketSlot* slot = fd_table().find(connection.fd)) {
    entry.write_epoch = slot->keep_warm_gate.write_epoch();
  }
  // Room first (this may throw: the connection is then not kept warm), so that run_due, which
  // only moves indexes between these, never allocates.
  const std::size_t wanted = connections_.size() + 1;
  if (heap_.capacity() < wanted || free_.capacity() < wanted || due_now_.capacity() < wanted) {
    const std::size_t room = std::max<std::size_t>(2 * wanted, 64);
    heap_.reserve(room);
    free_.reserve(room);
    due_now_.reserve(room);
  }
  const std::uint32_t index = free_.empty() ? static_cast<std::uint32_t>(connections_.size()) : free_.back();
  if (!connection.target.marked) {  // rare (a kernel before 4.19): only then is there a target to keep
    if (targets_.size() <= index) {
      targets_.resize(index + 1);
    }
    targets_[index] = connection.target;
  }
  if (free_.empty()) {
    connections_.push_back(entry);
  } else {
    free_.pop_back();
    connections_[index] = entry;
  }
  heap_.push_back({now_ns, index});
  std::push_heap(heap_.begin(), heap_.end(), DueLater{});
}

std::int64_t KeepWarmScheduler::run_due(std::int64_t now_ns, const config::Policy& policy) {
  // A checked entry's next check is at least kShortestRecheckNs > kDueBatchNs away, so each
  // entry is checked once per call.
  due_now_.clear();
  while (!heap_.empty() && heap_.front().due_ns <= now_ns + kDueBatchNs) {
    std::pop_heap(heap_.begin(), heap_.end(), DueLater{});
    due_now_.push_back(heap_.back().index);
    heap_.pop_back();
  }
  pollfd polled[kPollBatch];
  for (std::size_t first = 0; first < due_now_.size(); first += kPollBatch) {
    const std::size_t last = std::min(due_now_.size(), first + kPollBatch);
    // Scattered in memory: ask for them all before using any.
    for (std::size_t i = first; i < last; ++i) {
      __builtin_prefetch(&connections_[due_now_[i]]);
    }
    // The quiet candidates among these, asked at once whether a FIN, reset or error came;
    // their fd slots (the gate, the counters) are fetched meanwhile.
    nfds_t count = 0;
    for (std::size_t i = first; i < last; ++i) {
      const Connection& entry = connections_[due_now_[i]];
      if (const SocketSlot* slot = fd_table().find(entry.fd)) {
        __builtin_prefetch(slot, 1);
        __builtin_prefetch(&slot->stats.counters.heartbeats, 1);  // and heartbeat_bytes, beside it
      }
      if (quiet_candidate(entry)) {
        polled[count++] = {entry.fd, POLLRDHUP, 0};
      }
    }
    if (count != 0 && next::poll(polled, count, 0) < 0) {
      for (nfds_t k = 0; k < count; ++k) {
        polled[k].revents = POLLERR;  // unanswered: each looks at TCP_INFO instead
      }
    }
    nfds_t answer = 0;
    for (std::size_t i = first; i < last; ++i) {
      const std::uint32_t index = due_now_[i];
      bool quiet = false;
      if (quiet_candidate(connections_[index])) {
        quiet = (polled[answer++].revents & kNotQuiet) == 0;
      }
      std::int64_t due_ns = 0;
      if (check(index, now_ns, policy, quiet, due_ns) == Outcome::drop) {
        free_.push_back(index);  // within the room add() made
      } else {
        heap_.push_back({due_ns, index});  // within the capacity it had before run_due
        std::push_heap(heap_.begin(), heap_.end(), DueLater{});
      }
    }
  }
  return heap_.empty() ? std::numeric_limits<std::int64_t>::max() : heap_.front().due_ns;
}

KeepWarmScheduler::Outcome KeepWarmScheduler::check(std::uint32_t index, std::int64_t now_ns,
                                                    const config::Policy& policy, bool quiet, std::int64_t& due_ns) {
  Connection& entry = connections_[index];
  SocketSlot* slot = fd_table().find(entry.fd);
  if (slot == nullptr || slot->generation.load(std::memory_order_acquire) != entry.generation ||
      !slot->has_flag(flag_keep_warm)) {
    return Outcome::drop;  // closed, reused or shared
  }
  const config::KeepWarm& settings = *config::tuning_for(policy, entry.rule_index).keep_warm;
  KeepWarmGate& gate = slot->keep_warm_gate;
  const std::uint32_t epoch = gate.write_epoch();
  if (epoch != entry.write_epoch) {
    entry.write_epoch = epoch;
    entry.last_app_write_ns = now_ns;
    entry.cold = false;
    entry.sent_ns = 0;  // the app wrote: what is in flight now only the kernel knows
  }
  const std::int64_t sent_before_ns = entry.sent_ns;
  entry.sent_ns = 0;  // until this check sends one
  if (entry.cold || now_ns - entry.last_app_write_ns > settings.max_idle.count()) {
    due_ns = now_ns + entry.look.interval_ns;  // dormant until the app writes again
    return Outcome::keep;
  }
  // A write in progress or a message half written: the kernel's idle clock restarts with the
  // app's next send, so a look every quarter interval is soon enough.
  const std::int64_t busy_recheck_ns = std::max(entry.look.interval_ns / 4, kShortestRecheckNs);
  std::optional<HeartbeatDecision> decision;
  if (quiet && sent_before_ns != 0 && entry.quiet_left > 0) {
    decision = decide_quiet_heartbeat(entry.look, sent_before_ns, now_ns);
  }
  const bool looked = !decision.has_value();
  bool settled = false;
  if (looked) {
    // The kernel is asked first, without the gate, so the app never waits behind these calls.
    const std::optional<TcpInfoSummary> info = read_tcp_info(entry.fd);
    if (!info) {
      return Outcome::drop;
    }
    int queued = 0;
    if (info->notsent_bytes) {
      queued = static_cast<int>(std::min<std::uint32_t>(*info->notsent_bytes, INT32_MAX));
    } else if (ioctl(entry.fd, SIOCOUTQ, &queued) != 0) {
      return Outcome::drop;
    }
    decision = decide_heartbeat(*info, queued, settings);
    if (!same_rto(entry.look, *info)) {
      entry.look.rto_us = info->rto_us;  // counted from here
      entry.look.rtt_us = info->rtt_us;
      entry.steady = 0;
    }
    entry.look.cwnd = info->snd_cwnd;
    entry.look.interval_ns = decision->interval_ns;
    settled = quiet_allowed(entry.steady, settings);
  }
  due_ns = now_ns + decision->recheck_ns;
  entry.cold = decision->verdict == HeartbeatVerdict::cold && gate.write_epoch() == epoch;
  if (decision->verdict != HeartbeatVerdict::send) {
    if (!looked) {
      entry.sent_ns = sent_before_ns;  // woken early: still waiting out the interval after it
    }
    return decision->verdict == HeartbeatVerdict::stop ? Outcome::drop : Outcome::keep;
  }
  if (!gate.try_begin_heartbeat()) {
    due_ns = now_ns + busy_recheck_ns;
    return Outcome::keep;
  }
  // Under the gate no app write can start, and a close or dup waits for end_heartbeat(). What
  // the kernel said (or the last heartbeat left) still holds if the app wrote nothing since;
  // the send itself checks that the descriptor still names the socket.
  if (gate.write_epoch() != epoch) {
    gate.end_heartbeat();
    due_ns = now_ns + busy_recheck_ns;
    return Outcome::keep;
  }
  const HeartbeatTarget target = entry.marked ? HeartbeatTarget{true, 0, 0} : targets_[index];
  const SendOutcome sent = send_heartbeat(entry.fd, target, settings.payload);
  if (sent == SendOutcome::sent) {
    slot->stats.counters.heartbeats.fetch_add(1, std::memory_order_relaxed);
    slot->stats.counters.heartbeat_bytes.fetch_add(settings.payload.size(), std::memory_order_relaxed);
    entry.sent_ns = now_ns;
    if (entry.steady != UINT8_MAX) {
      ++entry.steady;
    }
    if (looked) {
      entry.quiet_left = settled ? kQuietHeartbeats : 0;
    } else {
      --entry.quiet_left;
    }
  }
  gate.end_heartbeat(sent == SendOutcome::sent);
  return sent == SendOutcome::broken ? Outcome::drop : Outcome::keep;
}

}  // namespace tcptune::shim
