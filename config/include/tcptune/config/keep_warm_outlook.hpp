// Whether keep_warm can do anything in this network namespace: the kernel restarts a window after
// idle only with net.ipv4.tcp_slow_start_after_idle on, and never for a congestion control with
// its own cong_control (BBR: tcp_slow_start_after_idle_check), and the shim then sends nothing.
#pragma once

#include <optional>
#include <string>

#include "tcptune/config/policy.hpp"

namespace tcptune::config {

struct IdleRestart {
  std::string default_congestion;             // net.ipv4.tcp_congestion_control; "" when unreadable
  std::optional<bool> slow_start_after_idle;  // net.ipv4.tcp_slow_start_after_idle; unset when unreadable
};

IdleRestart read_idle_restart(const std::string& proc_sys_root = "/proc/sys");

// BBR (and its later versions) keeps its own model across idle: the kernel does not restart it.
bool keeps_window_after_idle(const std::string& congestion);

// Why keep_warm in `tuning` (a rule's effective tuning, or [defaults]) sends no heartbeat here,
// in a clause ("its congestion control is bbr, the namespace's default ..."), or "" when it may.
std::string keep_warm_futility(const Tuning& tuning, const IdleRestart& host);

}  // namespace tcptune::config
