// The worker's side of keep-warm: when each kept-warm connection is looked at again, what the
// kernel's view of it decides (decide_heartbeat), and the heartbeat sent under the
// connection's gate. The app's side (start, stop, fork) is keep_warm.hpp.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

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

// A connection the worker keeps warm, as the app thread hands it over.
struct WarmConnection {
  int fd = -1;
  std::uint32_t generation = 0;
  std::int16_t rule_index = kRuleDefaults;
  std::uint64_t inode = 0;  // the socket's, to notice an fd closed and reused behind the hooks
  std::uint64_t device = 0;
};

// The worker's kept-warm connections, in a min-heap by next check: a wake-up costs
// O(log n) per connection checked, and connections not due are not looked at. Worker thread
// only.
class KeepWarmScheduler {
 public:
  void add(const WarmConnection& connection, std::int64_t now_ns);
  // Checks the connections due by now (or within kDueBatchNs), sending their heartbeats;
  // returns when the next check is due (INT64_MAX: nothing to check).
  std::int64_t run_due(std::int64_t now_ns, const config::Policy& policy);
  [[nodiscard]] std::size_t size() const noexcept { return entries_.size(); }

 private:
  struct Entry {
    WarmConnection connection;
    std::int64_t due_ns = 0;
    std::int64_t interval_ns = 0;  // as of the last look at TCP_INFO
    std::uint32_t write_epoch = 0;
    std::int64_t last_app_write_ns = 0;  // when the worker first saw the epoch change
    bool cold = false;                   // found cold at write_epoch: TCP_INFO is not read again until it moves
  };
  // std::*_heap order: the entry due first at the front.
  static bool due_later(const Entry& a, const Entry& b) noexcept { return a.due_ns > b.due_ns; }
  enum class Outcome : std::uint8_t { keep, drop };
  Outcome check(Entry& entry, std::int64_t now_ns, const config::Policy& policy);
  std::vector<Entry> entries_;
};

}  // namespace tcptune::shim
