#include "idle_restart.hpp"

#include "errno_saver.hpp"
#include "fd_table.hpp"
#include "socket_probe.hpp"
#include "tcptune/config/host_sysctl.hpp"
#include "telemetry_worker.hpp"

namespace tcptune::shim {

std::uint32_t slow_start_round_trips(std::uint64_t segments, std::uint64_t cwnd) noexcept {
  if (cwnd == 0) {
    cwnd = 1;
  }
  std::uint32_t rounds = 1;
  for (std::uint64_t sent = cwnd, window = cwnd; sent < segments && rounds < 64; ++rounds) {
    window *= 2;
    sent += window;
  }
  return rounds;
}

bool namespace_restarts_after_idle() noexcept {
  static const bool restarts = [] {
    const ErrnoSaver saver;
    try {
      const auto value = config::read_sysctl_numbers("net/ipv4/tcp_slow_start_after_idle");
      return value.empty() || value[0] != 0;  // unreadable: the kernel's default, 1
    } catch (...) {
      return true;
    }
  }();
  return restarts;
}

void note_idle_restart_possible(int fd, std::uint32_t generation) noexcept {
  if (!namespace_restarts_after_idle()) {
    return;
  }
  const ErrnoSaver saver;
  SocketSlot* slot = fd_table().find(fd);
  const auto same = [&] {
    return slot != nullptr && slot->generation.load(std::memory_order_acquire) == generation &&
           slot->role.load(std::memory_order_relaxed) != SocketRole::listener;
  };
  try {
    if (!same() || get_congestion(fd).rfind("bbr", 0) == 0) {
      return;
    }
  } catch (...) {
    return;  // out of memory for the name: the flag stays off (no idle_restart records)
  }
  slot->set_flag(flag_idle_restart_possible);
  if (!same()) {
    slot->clear_flag(flag_idle_restart_possible);
  }
}

IdleCheck check_idle_before_write(int fd, const SocketSlot& slot, std::int64_t now_ns) noexcept {
  IdleCheck check;
  if (!slot.has_flag(flag_idle_restart_possible)) {
    return check;
  }
  std::int64_t last = slot.stats.last_write_end_ns.load(std::memory_order_relaxed);
  if (last == 0) {
    last = slot.stats.opened_ns.load(std::memory_order_relaxed);
  }
  if (now_ns - last < kShortestRestartGapNs) {
    return check;
  }
  const auto info = read_tcp_info(fd);
  // The kernel's own test: nothing in flight and no payload sent for longer than the RTO.
  if (!info || info->unacked != 0 || std::uint64_t{info->last_data_sent_ms} * 1000 <= info->rto_us) {
    return check;
  }
  check.armed = true;
  check.idle_ms = info->last_data_sent_ms;
  check.before = *info;
  return check;
}

void report_idle_restart(int fd, SocketSlot& slot, const IdleCheck& check, ssize_t result,
                         std::size_t offered) noexcept {
  if (!check.armed) {
    return;
  }
  const auto after = read_tcp_info(fd);
  if (!after || after->snd_cwnd >= check.before.snd_cwnd) {
    return;
  }
  slot.stats.counters.idle_restarts.fetch_add(1, std::memory_order_relaxed);
  IdleRestart event;
  event.fd = fd;
  event.rule_index = slot.rule_index.load(std::memory_order_relaxed);
  event.idle_ms = check.idle_ms;
  event.rto_us = check.before.rto_us;
  event.rtt_us = check.before.rtt_us;
  event.cwnd_before = check.before.snd_cwnd;
  event.cwnd_after = after->snd_cwnd;
  event.mss = after->snd_mss;
  event.bytes = result > 0 ? static_cast<std::uint64_t>(result) : offered;
  const std::uint64_t mss = event.mss != 0 ? event.mss : 1448;
  const std::uint64_t segments = (event.bytes + mss - 1) / mss;
  const std::uint32_t restarted = slow_start_round_trips(segments, event.cwnd_after);
  const std::uint32_t warm = slow_start_round_trips(segments, event.cwnd_before);
  event.extra_round_trips = restarted > warm ? restarted - warm : 0;
  post_idle_restart(event);
}

}  // namespace tcptune::shim
