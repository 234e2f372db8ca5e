// Idle-restart diagnosis. Linux shrinks the congestion window of a connection that sent
// nothing for longer than its RTO, with nothing in flight, unless the namespace turned
// tcp_slow_start_after_idle off or the congestion control is BBR (kernel-notes.md). The first
// write after such a gap reads TCP_INFO before and after the call; when cwnd shrank, an
// idle_restart record says by how much and what it will likely cost.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>

#include "socket_slot.hpp"
#include "tcp_info_reader.hpp"

namespace tcptune::shim {

// The RTO floor (TCP_RTO_MIN): no restart can follow a shorter gap, so shorter gaps cost a
// comparison and no system call.
inline constexpr std::int64_t kShortestRestartGapNs = 200'000'000;

// A write found the congestion window restarted after idle: an idle_restart record.
struct IdleRestart {
  int fd = -1;
  std::int16_t rule_index = kRuleDefaults;
  std::uint32_t idle_ms = 0;
  std::uint32_t rto_us = 0;
  std::uint32_t rtt_us = 0;
  std::uint32_t cwnd_before = 0;
  std::uint32_t cwnd_after = 0;
  std::uint32_t mss = 0;
  std::uint64_t bytes = 0;
  std::uint32_t extra_round_trips = 0;
};

struct IdleCheck {
  bool armed = false;
  std::uint32_t idle_ms = 0;
  TcpInfoSummary before;
};

// Before a measured write at now_ns. Reads TCP_INFO only after a gap of at least the RTO
// floor on a connection where a restart is possible. Preserves errno.
IdleCheck check_idle_before_write(int fd, const SocketSlot& slot, std::int64_t now_ns) noexcept;
// After that write: compares cwnd, counts and reports a restart. Preserves errno.
void report_idle_restart(int fd, SocketSlot& slot, const IdleCheck& check, ssize_t result,
                         std::size_t offered) noexcept;

// Round trips slow start needs to send `segments` from a window of `cwnd` segments (the
// window doubling each round): 1 for segments <= cwnd.
std::uint32_t slow_start_round_trips(std::uint64_t segments, std::uint64_t cwnd) noexcept;

// Whether this process's network namespace restarts cwnd after idle (read once).
bool namespace_restarts_after_idle() noexcept;

// Whether the kernel may restart connection `generation`'s window after idle (the namespace
// does, and its congestion control is not BBR): sets the slot's flag_idle_restart_possible,
// which the writes look at. One system call (TCP_CONGESTION), made off the write path, by the
// worker as it writes the connection's conn_open or, where the worker does not get that,
// the thread that set it up. A connection closed meanwhile (its number perhaps another
// socket's by now) does not keep the flag; a listener gets none.
void note_idle_restart_possible(int fd, std::uint32_t generation) noexcept;

}  // namespace tcptune::shim
