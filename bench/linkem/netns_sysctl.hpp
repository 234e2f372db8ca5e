// The per-namespace TCP sysctls of the link: read and written from inside each namespace (/proc/sys/net
// shows the namespace of the process that opens it). Setting a default congestion control that the host
// restricts (cubic here: tcp_allowed_congestion_control is "reno bbr") needs it in the host-global allowed
// list for the moment of the write; the previous list is restored exactly, on error paths too.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "link_config.hpp"

namespace tcptune::linkem {

// Reads or writes a /proc/sys file of the current network namespace. Values are trimmed.
bool read_sysctl(const std::string& path, std::string& value, std::string& error);
bool write_sysctl(const std::string& path, std::string_view value, std::string& error);

bool read_netns_sysctls(std::string_view netns, NetnsSysctls& sysctls, std::string& error);
bool apply_netns_sysctls(std::span<const std::string_view> namespaces, const SysctlChange& change, std::string& error);

}  // namespace tcptune::linkem
