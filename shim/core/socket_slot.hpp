// What the shim knows about one file descriptor number (640 bytes with its write statistics,
// keep-warm's framer and a pointer to its endpoints, inside the 1 KiB per-connection budget with
// room for the worker's share). Slots live in the FdTable and are never freed: closing an fd
// retires its slot (generation bumped, state reset), so a reused number never inherits an old
// connection's state and a racing reader never touches freed memory. Every field is atomic
// because hooks on one fd may run on several threads, but the framer, which the keep-warm gate
// gives to one writer at a time.
#pragma once

#include <atomic>
#include <cstdint>

#include "app_settings.hpp"
#include "connection_stats.hpp"
#include "keep_warm_gate.hpp"
#include "message_framer.hpp"
#include "socket_probe.hpp"
#include "socket_role.hpp"

namespace tcptune::shim {

class ConnectionNames;

// Rule index meaning "not chosen yet": the socket has neither connected nor listened.
inline constexpr std::int16_t kRuleUnchosen = -2;
// Rule index meaning "[defaults] applies" (config::match_rule returns -1).
inline constexpr std::int16_t kRuleDefaults = -1;

// Per-connection behaviour the hooks consult after the rule is applied.
enum SlotFlag : std::uint16_t {
  flag_nodelay_forced = 1U << 0,    // veto TCP_NODELAY=0 and TCP_CORK=1
  flag_override_buffers = 1U << 1,  // veto the app's SO_SNDBUF/SO_RCVBUF
  flag_quickack = 1U << 2,          // re-arm TCP_QUICKACK after each read
  flag_rtt_auto_pending = 1U << 3,  // size sndbuf from the measured RTT once established
  flag_veto_nodelay_logged = 1U << 4,
  flag_veto_cork_logged = 1U << 5,
  flag_veto_buffers_logged = 1U << 6,
  flag_measured = 1U << 7,  // writes are timed; a conn_close record follows the close
  // The kernel may restart cwnd after idle here (tcp_slow_start_after_idle=1, no BBR): the
  // first write after idle is checked against TCP_INFO.
  flag_idle_restart_possible = 1U << 8,
  flag_callsite = 1U << 9,    // callsite = true: backtraces at open and on slow writes
  flag_keep_warm = 1U << 10,  // app writes pass the keep-warm gate; the worker sends heartbeats
  // Received from another process (SCM_RIGHTS), which may still write to it: adopted like an
  // inherited socket.
  flag_received = 1U << 11,
  // Wrapped in a FILE (fdopen): stdio writes go past the hooks, so the gate cannot see them.
  flag_stdio = 1U << 12,
  // nodelay = "on-wait" with Nagle on: writes are noted, and pushed when the thread waits
  // (wait_push.hpp). Cleared when the app sets TCP_NODELAY itself.
  flag_push_on_wait = 1U << 13,
  // A close's snapshot or a conn_open being handed to the worker: an exit or exec waits for it
  // before its last drain (telemetry_worker.cpp, begin_hand_over).
  flag_handing_over = 1U << 14,
};

struct SocketSlot {
  std::atomic<std::uint32_t> generation{0};
  std::atomic<FdKind> kind{FdKind::unknown};
  std::atomic<SocketRole> role{SocketRole::unknown};
  std::atomic<std::int16_t> rule_index{kRuleUnchosen};
  std::atomic<std::uint16_t> flags{0};
  std::atomic<std::uint16_t> app_options{0};
  // The app's SO_SNDBUF/SO_RCVBUF held back until the rule is known (kNoHeldBuffer: none).
  std::atomic<std::int32_t> held_sndbuf{kNoHeldBuffer};
  std::atomic<std::int32_t> held_rcvbuf{kNoHeldBuffer};
  KeepWarmGate keep_warm_gate;  // 4 bytes: here, the slot has no padding
  // Reset when measurement starts (the rule is applied), not when the fd is retired: a close
  // only has to bump the generation.
  telemetry::ConnectionStats stats;
  // The connection's endpoints and a client's conn_open before its connect completes; set at the
  // number's first tuned connection, never freed (connection_names.hpp).
  std::atomic<ConnectionNames*> names{nullptr};
  // Where the app's messages end, for keep-warm with a protocol preset; the app's writers'
  // (one at a time, through the gate).
  MessageFramer framer;

  [[nodiscard]] bool is_tcp() const noexcept { return kind.load(std::memory_order_acquire) == FdKind::tcp; }
  [[nodiscard]] bool has_flag(SlotFlag flag) const noexcept {
    return (flags.load(std::memory_order_relaxed) & flag) != 0;
  }
  void set_flag(SlotFlag flag) noexcept { flags.fetch_or(flag, std::memory_order_relaxed); }
  void clear_flag(SlotFlag flag) noexcept {
    flags.fetch_and(static_cast<std::uint16_t>(~flag), std::memory_order_relaxed);
  }
  // True the first time; for "logged once per connection" messages.
  bool set_flag_first_time(SlotFlag flag) noexcept {
    return (flags.fetch_or(flag, std::memory_order_relaxed) & flag) == 0;
  }
};
// Every fd number has one: what it grows by is paid once per connection.
static_assert(sizeof(SocketSlot) <= 640, "the slot outgrew its share of the 1 KiB per-connection budget");

}  // namespace tcptune::shim
