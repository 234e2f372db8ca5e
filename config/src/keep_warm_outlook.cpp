#include "tcptune/config/keep_warm_outlook.hpp"

#include "tcptune/config/host_sysctl.hpp"

namespace tcptune::config {

IdleRestart read_idle_restart(const std::string& proc_sys_root) {
  IdleRestart out;
  out.default_congestion = read_sysctl("net/ipv4/tcp_congestion_control", proc_sys_root).value_or("");
  if (const auto value = read_sysctl("net/ipv4/tcp_slow_start_after_idle", proc_sys_root)) {
    out.slow_start_after_idle = *value != "0";
  }
  return out;
}

bool keeps_window_after_idle(const std::string& congestion) {
  return congestion.rfind("bbr", 0) == 0;
}

std::string keep_warm_futility(const Tuning& tuning, const IdleRestart& host) {
  if (!tuning.keep_warm.has_value()) {
    return {};
  }
  if (host.slow_start_after_idle == false) {
    return "net.ipv4.tcp_slow_start_after_idle is 0 in this network namespace, so no window is restarted after "
           "idle";
  }
  if (tuning.congestion.has_value()) {
    if (keeps_window_after_idle(*tuning.congestion)) {
      return "its congestion = \"" + *tuning.congestion +
             "\" keeps the window across idle (the kernel restarts no window for BBR)";
    }
    return {};
  }
  if (keeps_window_after_idle(host.default_congestion)) {
    return "it sets no congestion, and this namespace's default (net.ipv4.tcp_congestion_control) is " +
           host.default_congestion + ", which keeps the window across idle (the kernel restarts no window for BBR)";
  }
  return {};
}

}  // namespace tcptune::config
