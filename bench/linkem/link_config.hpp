// Everything `up` and `run` accept (LINK OPTIONS) and what `set` may change, parsed from the command line.
// Pure: no I/O, so the rules (per-direction overrides, --rtt vs --delay, defaults) are unit-tested.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "link_model.hpp"

namespace tcptune::linkem {

enum class Backend { kAuto, kTun, kNetem };
std::string_view backend_name(Backend backend);

// The per-namespace TCP sysctls that linkem sets in both namespaces.
struct NetnsSysctls {
  std::string congestion = "cubic";  // net.ipv4.tcp_congestion_control
  int slow_start_after_idle = 1;     // net.ipv4.tcp_slow_start_after_idle
};

struct LinkConfig {
  LinkParams a_to_b;
  LinkParams b_to_a;
  std::uint64_t seed = 0;
  bool seed_given = false;  // otherwise the caller picks one and reports it, so a run can be repeated
  NetnsSysctls sysctls;
  Backend backend = Backend::kAuto;
};

// Parses LINK OPTIONS ("--rtt 40ms", "--ab-rate=100Mbit", ...) into 'config', which holds the defaults.
// Returns false with a one-line reason in 'error'.
bool parse_link_options(std::span<const std::string_view> args, LinkConfig& config, std::string& error);

// What `set` changes: only the options given.
struct SysctlChange {
  std::optional<std::string> congestion;
  std::optional<int> slow_start_after_idle;
};
bool parse_set_options(std::span<const std::string_view> args, SysctlChange& change, std::string& error);

// A congestion control name as the kernel accepts it (TCP_CA_NAME_MAX is 16 with the terminator).
bool valid_congestion_name(std::string_view name);

}  // namespace tcptune::linkem
