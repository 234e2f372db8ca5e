// The worker's side of keep-warm: when each kept-warm connection is looked at again, what the
// kernel's view of it decides (decide_heartbeat), and the heartbeat sent under the
// connection's gate. The app's side (start, stop, fork) is keep_warm.hpp.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "heartbeat_send.hpp"
#include "socket_slot.hpp"
#include "tcp_info_reader.hpp"
#include "tcptune/config/policy.hpp"

namespace tcptune::shim {

// Linux's initial congestion window (TCP_INIT_CWND): at or below it a restart changes nothing.
inline constexpr std::uint32_t kInitialWindowSegments = 10;
// The shortest wait between two checks of one connection.
inline constexpr std::int64_t kShortestRecheckNs = 2'000'000;
// interval "auto" is the RTO less this margin. The kernel restarts the window when a send
// finds `jiffies - lsndtime > RTO` (tcp_slow_start_after_idle_check), so one heartbeat per RTO
// of silence is the floor; the margin covers, at most:
// - jiffy rounding, 20 ms: two jiffies at HZ=100, the coarsest tick in use (lsndtime is
//   stamped in jiffies, and the worker learns it through tcpi_last_data_sent, a count of
//   jiffies in ms);
// - the worker waking late, 30 ms: its futex timeout's slack (50 us) plus scheduling delay on
//   a busy machine.
// At the 200 ms RTO floor that is 1.33 heartbeats per RTO of silence, less on longer paths.
inline constexpr std::int64_t kAutoIntervalMarginNs = 50'000'000;
// Connections due this close together are checked in one wake-up of the worker (a heartbeat
// may go this much early; the margin above leaves room for it).
inline constexpr std::int64_t kDueBatchNs = 1'000'000;
// A check that finds the connection idle for the interval less this sends at once: the
// worker woke a batch early, or tcpi_last_data_sent, a whole count of jiffies, reads up to one
// jiffy (4 ms at HZ=250) short. Without it such a check would read TCP_INFO again 2 ms later.
// At the 200 ms RTO floor this makes at most 200 / (150 - 5) = 1.38 heartbeats per RTO.
inline constexpr std::int64_t kSendEarlyNs = 5'000'000;

// What one check of a connection decides, from the kernel's view of it.
enum class HeartbeatVerdict : std::uint8_t {
  send,     // idle for the interval with a window worth keeping: send the heartbeat now
  not_yet,  // check again after recheck_ns
  cold,     // nothing in flight and a window no larger than the initial one, now or once the
            // silence so far restarts it: nothing to keep until the app writes again (only its
            // sends can grow the window)
  stop,     // the connection is closing (FIN sent or received, reset): never again
};
struct HeartbeatDecision {
  HeartbeatVerdict verdict = HeartbeatVerdict::not_yet;
  std::int64_t recheck_ns = 0;
  std::int64_t interval_ns = 0;  // in force: the configured one, or the RTO less the margin
};
// The window the next send leaves after `silent_ns` without one, as the kernel's
// tcp_cwnd_restart computes it: halved once per whole RTO of silence beyond the first, never
// below the initial window (or the window itself, if smaller). Pure, for unit tests.
std::uint32_t window_after_restart(std::uint32_t cwnd, std::int64_t silent_ns, std::int64_t rto_ns) noexcept;
// `queued`: bytes written and not yet sent (tcpi_notsent_bytes, or SIOCOUTQ on kernels before
// 4.6). Pure, for unit tests.
HeartbeatDecision decide_heartbeat(const TcpInfoSummary& info, int queued, const config::KeepWarm& settings) noexcept;

// Heartbeats in a row that may go without reading TCP_INFO (a "quiet" one: see
// decide_quiet_heartbeat), before the next look at the kernel's view. TCP_INFO costs about a
// fifth of the send on loopback; one look per 8 heartbeats leaves 3% of it. At the 150 ms
// interval of the RTO floor that is a look every 1.2 s.
inline constexpr std::uint8_t kQuietHeartbeats = 7;
// With interval "auto", quiet heartbeats wait until the RTO has held still over this many
// heartbeats (RTT samples, one per heartbeat's ACK), and the RTT within kSettledRttUs. The
// kernel moves the smoothed RTT by an eighth and the RTO's variance term by a quarter of
// their distance to where they settle at each sample, so after 8 samples with no visible
// move what is left is less than 1.5 ms of RTT and about a jiffy of variance: all the RTO can
// still fall while the quiet heartbeats use the last look's (the auto interval's margin is
// 50 ms). Right after a burst the RTO often falls a jiffy per sample for a dozen samples: a
// look at each heartbeat then, as without quiet heartbeats.
inline constexpr std::uint8_t kSettledHeartbeats = 8;
inline constexpr std::uint32_t kSettledRttUs = 1000;

// What the looks at TCP_INFO left, for the heartbeats that follow without one.
struct LastLook {
  std::int64_t interval_ns = 0;  // in force at the last look
  std::uint32_t cwnd = 0;        // at the last look
  std::uint32_t rto_us = 0;      // the RTO, read the same at every look since it was first read
  std::uint32_t rtt_us = 0;      // the RTT at that first reading
};

// Whether this look reads the RTO of `reference` and an RTT within kSettledRttUs of its. Pure,
// for unit tests.
bool same_rto(const LastLook& reference, const TcpInfoSummary& info) noexcept;
// Whether heartbeats may go without TCP_INFO once `steady` heartbeats have gone with the same
// RTO: a fixed interval does not follow the RTO. Pure, for unit tests.
bool quiet_allowed(std::uint8_t steady, const config::KeepWarm& settings) noexcept;

// A check without TCP_INFO, after a heartbeat this worker sent at sent_ns, with no app write
// since and poll() finding no FIN, reset or error on the connection: nothing but that
// heartbeat can have gone out, so the connection has been silent since sent_ns, and its window
// and RTO are the last look's. (A heartbeat still unacknowledged, or a window a loss cut
// meanwhile, only makes this one unneeded; the next look sees it.) send or not_yet; nullopt
// when only the kernel can say (a worker so late that the silence alone would restart the
// window). Pure, for unit tests.
std::optional<HeartbeatDecision> decide_quiet_heartbeat(const LastLook& look, std::int64_t sent_ns,
                                                        std::int64_t now_ns) noexcept;

// A connection the worker keeps warm, as the app thread hands it over.
struct WarmConnection {
  int fd = -1;
  std::uint32_t generation = 0;
  std::int16_t rule_index = kRuleDefaults;
  HeartbeatTarget target;  // the socket's identity, checked at each send
};

// The worker's kept-warm connections, in a min-heap by next check: a wake-up costs O(log n)
// per connection checked, and connections not due are not looked at. At 10,000 connections a
// check's own cost is mostly memory: the heap holds 16-byte entries (when, which) and each
// connection's state is one cache line in a dense array, fetched ahead together with its fd
// slot's. The connections due in one wake-up are polled together, kPollBatch per poll(), for a
// FIN, reset or error: the only news a quiet heartbeat needs from the kernel. Worker thread
// only.
class KeepWarmScheduler {
 public:
  void add(const WarmConnection& connection, std::int64_t now_ns);
  // Checks the connections due by now (or within kDueBatchNs), sending their heartbeats;
  // returns when the next check is due (INT64_MAX: nothing to check).
  std::int64_t run_due(std::int64_t now_ns, const config::Policy& policy);
  [[nodiscard]] std::size_t size() const noexcept { return heap_.size(); }

 private:
  struct Due {
    std::int64_t due_ns = 0;
    std::uint32_t index = 0;  // into connections_
  };
  // What a check reads and writes, in one cache line.
  struct alignas(64) Connection {
    LastLook look;
    std::int64_t last_app_write_ns = 0;  // when the worker first saw the epoch change
    std::int64_t sent_ns = 0;            // the last check's heartbeat, 0 if it sent none
    int fd = -1;
    std::uint32_t generation = 0;
    std::uint32_t write_epoch = 0;
    std::int16_t rule_index = kRuleDefaults;
    std::uint8_t quiet_left = 0;  // heartbeats that may still go without TCP_INFO
    std::uint8_t steady = 0;      // heartbeats since the RTO in `look` was first read (saturates)
    bool cold = false;            // found cold at write_epoch: TCP_INFO is not read again until it moves
    bool marked = false;          // the kernel checks the socket's identity at each send
  };
  static_assert(sizeof(Connection) == 64, "a connection's state is one cache line");
  enum class Outcome : std::uint8_t { keep, drop };
  // `quiet`: poll() found nothing to report on the descriptor just now. Sets `due_ns` when it
  // keeps the connection.
  Outcome check(std::uint32_t index, std::int64_t now_ns, const config::Policy& policy, bool quiet,
                std::int64_t& due_ns);
  // Whether the check may go without TCP_INFO if poll() finds nothing (worth polling for).
  [[nodiscard]] static bool quiet_candidate(const Connection& entry) noexcept {
    return entry.quiet_left > 0 && entry.sent_ns != 0;
  }
  std::vector<Due> heap_;
  std::vector<Connection> connections_;
  std::vector<HeartbeatTarget> targets_;  // by the same index, for unmarked sockets only (else empty)
  std::vector<std::uint32_t> free_;       // indexes of dropped connections, reused first
  std::vector<std::uint32_t> due_now_;
};

}  // namespace tcptune::shim
