#include "keep_warm_scheduler.hpp"

#include <linux/sockios.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>

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
// How long a heartbeat accepted in part may take to finish (the gate is held meanwhile).
constexpr int kRemainderPolls = 50;
constexpr int kRemainderPollMs = 10;

// not_sent: nothing went out, try later; broken: the connection failed.
enum class SendOutcome : std::uint8_t { sent, not_sent, broken };

// The whole payload or nothing: a heartbeat cut in two would corrupt the stream, so a part
// accepted is finished while the gate holds the app's writes back. (With at most 64 bytes on
// an empty send queue a part is not expected at all; `broken` after that means the
// connection failed.)
SendOutcome send_payload(int fd, const std::string& payload) noexcept {
  const ErrnoSaver saver;
  std::size_t sent = 0;
  int polls = 0;
  while (sent < payload.size()) {
    const ssize_t n = next::send(fd, payload.data() + sent, payload.size() - sent, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n > 0) {
      sent += static_cast<std::size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) && sent > 0 && polls++ < kRemainderPolls) {
      pollfd writable{fd, POLLOUT, 0};
      poll(&writable, 1, kRemainderPollMs);
      continue;
    }
    const bool full_buffer = errno == EAGAIN || errno == EWOULDBLOCK;
    return sent == 0 && full_buffer ? SendOutcome::not_sent : SendOutcome::broken;
  }
  return SendOutcome::sent;
}

bool same_socket(const WarmConnection& connection) noexcept {
  struct stat now {};
  return fstat(connection.fd, &now) == 0 && now.st_ino == connection.inode && now.st_dev == connection.device;
}

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

void KeepWarmScheduler::add(const WarmConnection& connection, std::int64_t now_ns) {
  Entry entry{connection, now_ns, kFirstIntervalNs, 0, now_ns};
  if (const SocketSlot* slot = fd_table().find(connection.fd)) {
    entry.write_epoch = slot->keep_warm_gate.write_epoch();
  }
  entries_.push_back(entry);
  std::push_heap(entries_.begin(), entries_.end(), due_later);
}

std::int64_t KeepWarmScheduler::run_due(std::int64_t now_ns, const config::Policy& policy) {
  // A checked entry's next check is at least kShortestRecheckNs > kDueBatchNs away, so each
  // entry is checked once per call.
  while (!entries_.empty() && entries_.front().due_ns <= now_ns + kDueBatchNs) {
    std::pop_heap(entries_.begin(), entries_.end(), due_later);
    if (check(entries_.back(), now_ns, policy) == Outcome::drop) {
      entries_.pop_back();
    } else {
      std::push_heap(entries_.begin(), entries_.end(), due_later);
    }
  }
  return entries_.empty() ? std::numeric_limits<std::int64_t>::max() : entries_.front().due_ns;
}

KeepWarmScheduler::Outcome KeepWarmScheduler::check(Entry& entry, std::int64_t now_ns, const config::Policy& policy) {
  const WarmConnection& connection = entry.connection;
  SocketSlot* slot = fd_table().find(connection.fd);
  if (slot == nullptr || slot->generation.load(std::memory_order_acquire) != connection.generation ||
      !slot->has_flag(flag_keep_warm)) {
    return Outcome::drop;  // closed, reused or shared
  }
  const config::KeepWarm& settings = *config::tuning_for(policy, connection.rule_index).keep_warm;
  KeepWarmGate& gate = slot->keep_warm_gate;
  const std::uint32_t epoch = gate.write_epoch();
  if (epoch != entry.write_epoch) {
    entry.write_epoch = epoch;
    entry.last_app_write_ns = now_ns;
    entry.cold = false;
  }
  if (entry.cold || now_ns - entry.last_app_write_ns > settings.max_idle.count()) {
    entry.due_ns = now_ns + entry.interval_ns;  // dormant until the app writes again
    return Outcome::keep;
  }
  // A write in progress or a message half written: the kernel's idle clock restarts with the
  // app's next send, so a look every quarter interval is soon enough.
  const std::int64_t busy_recheck_ns = std::max(entry.interval_ns / 4, kShortestRecheckNs);
  // The kernel is asked first, without the gate, so the app never waits behind these calls.
  const std::optional<TcpInfoSummary> info = read_tcp_info(connection.fd);
  if (!info) {
    return Outcome::drop;
  }
  int queued = 0;
  if (info->notsent_bytes) {
    queued = static_cast<int>(std::min<std::uint32_t>(*info->notsent_bytes, INT32_MAX));
  } else if (ioctl(connection.fd, SIOCOUTQ, &queued) != 0) {
    return Outcome::drop;
  }
  const HeartbeatDecision decision = decide_heartbeat(*info, queued, settings);
  entry.interval_ns = decision.interval_ns;
  entry.due_ns = now_ns + decision.recheck_ns;
  entry.cold = decision.verdict == HeartbeatVerdict::cold && gate.write_epoch() == epoch;
  if (decision.verdict != HeartbeatVerdict::send) {
    return decision.verdict == HeartbeatVerdict::stop ? Outcome::drop : Outcome::keep;
  }
  if (!gate.try_begin_heartbeat()) {
    entry.due_ns = now_ns + busy_recheck_ns;
    return Outcome::keep;
  }
  // Under the gate no app write can start, and a close or dup waits for end_heartbeat(). What
  // the kernel said still holds if the app wrote nothing since; the fd must still be the socket.
  if (gate.write_epoch() != epoch) {
    gate.end_heartbeat();
    entry.due_ns = now_ns + busy_recheck_ns;
    return Outcome::keep;
  }
  if (!same_socket(connection)) {
    gate.end_heartbeat();
    return Outcome::drop;
  }
  const SendOutcome sent = send_payload(connection.fd, settings.payload);
  if (sent == SendOutcome::sent) {
    slot->stats.counters.heartbeats.fetch_add(1, std::memory_order_relaxed);
    slot->stats.counters.heartbeat_bytes.fetch_add(settings.payload.size(), std::memory_order_relaxed);
  }
  gate.end_heartbeat(sent == SendOutcome::sent);
  return sent == SendOutcome::broken ? Outcome::drop : Outcome::keep;
}

}  // namespace tcptune::shim
