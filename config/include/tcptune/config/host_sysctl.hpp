// Reading the network namespace's sysctls from /proc/sys. No sockets involved.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tcptune/config/buffer_plan.hpp"
#include "tcptune/config/tuning_keys.hpp"

namespace tcptune::config {

// "net/ipv4/tcp_rmem" -> its text, trimmed; nullopt when unreadable.
// `proc_sys_root` lets tests point at a fake tree.
std::optional<std::string> read_sysctl(const std::string& name, const std::string& proc_sys_root = "/proc/sys");
// The whitespace-separated integers of a sysctl ("4096 131072 6291456" -> 3 values).
std::vector<std::uint64_t> read_sysctl_numbers(const std::string& name, const std::string& proc_sys_root = "/proc/sys");

// net.core.{r,w}mem_max with net.ipv4.tcp_{r,w}mem; zeros where unreadable.
BufferLimits read_rcvbuf_limits(const std::string& proc_sys_root = "/proc/sys");
BufferLimits read_sndbuf_limits(const std::string& proc_sys_root = "/proc/sys");

// net.ipv4.tcp_keepalive_intvl and tcp_keepalive_probes; zeros where unreadable.
KeepaliveDefaults read_keepalive_defaults(const std::string& proc_sys_root = "/proc/sys");

// Whether this process has CAP_NET_ADMIN in its effective set (from /proc/self/status).
bool has_cap_net_admin();

}  // namespace tcptune::config
