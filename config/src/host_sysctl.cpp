#include "tcptune/config/host_sysctl.hpp"

#include <fstream>
#include <sstream>

namespace tcptune::config {

std::optional<std::string> read_sysctl(const std::string& name, const std::string& proc_sys_root) {
  std::ifstream file(proc_sys_root + "/" + name);
  if (!file) {
    return std::nullopt;
  }
  std::stringstream text;
  text << file.rdbuf();
  std::string value = text.str();
  while (!value.empty() && (value.back() == '\n' || value.back() == ' ' || value.back() == '\t')) {
    value.pop_back();
  }
  return value;
}

std::vector<std::uint64_t> read_sysctl_numbers(const std::string& name, const std::string& proc_sys_root) {
  std::vector<std::uint64_t> numbers;
  if (const auto text = read_sysctl(name, proc_sys_root)) {
    std::istringstream in(*text);
    std::uint64_t value = 0;
    while (in >> value) {
      numbers.push_back(value);
    }
  }
  return numbers;
}

namespace {
BufferLimits limits(const std::string& core, const std::string& tcp, const std::string& root) {
  BufferLimits out;
  const auto core_max = read_sysctl_numbers(core, root);
  const auto tcp_mem = read_sysctl_numbers(tcp, root);
  out.core_max = core_max.empty() ? 0 : core_max[0];
  if (tcp_mem.size() == 3) {
    out.autotune_default = tcp_mem[1];
    out.autotune_max = tcp_mem[2];
  }
  return out;
}
}  // namespace

BufferLimits read_rcvbuf_limits(const std::string& proc_sys_root) {
  return limits("net/core/rmem_max", "net/ipv4/tcp_rmem", proc_sys_root);
}
BufferLimits read_sndbuf_limits(const std::string& proc_sys_root) {
  return limits("net/core/wmem_max", "net/ipv4/tcp_wmem", proc_sys_root);
}

KeepaliveDefaults read_keepalive_defaults(const std::string& proc_sys_root) {
  KeepaliveDefaults out;
  const auto interval = read_sysctl_numbers("net/ipv4/tcp_keepalive_intvl", proc_sys_root);
  const auto probes = read_sysctl_numbers("net/ipv4/tcp_keepalive_probes", proc_sys_root);
  if (interval.size() == 1 && interval[0] <= 32767) {
    out.interval = std::chrono::seconds(interval[0]);
  }
  if (probes.size() == 1 && probes[0] <= 127) {
    out.probes = static_cast<int>(probes[0]);
  }
  return out;
}

bool has_cap_net_admin() {
  std::ifstream status("/proc/self/status");
  std::string line;
  constexpr int kCapNetAdmin = 12;
  while (std::getline(status, line)) {
    if (line.rfind("CapEff:", 0) == 0) {
      const std::uint64_t caps = std::stoull(line.substr(7), nullptr, 16);
      return ((caps >> kCapNetAdmin) & 1U) != 0;
    }
  }
  return false;
}

}  // namespace tcptune::config
