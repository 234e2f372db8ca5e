// How big a socket buffer to pin, if any, given the host's limits. Pure arithmetic so that
// `tcptune check` and the shim decide the same way and unit tests can pin every branch.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "tcptune/config/policy.hpp"

namespace tcptune::config {

// One direction's limits, as read from /proc/sys in the socket's network namespace.
struct BufferLimits {
  std::uint64_t core_max = 0;          // net.core.rmem_max / wmem_max (clamp for SO_*BUF)
  std::uint64_t autotune_default = 0;  // tcp_rmem[1] / tcp_wmem[1]
  std::uint64_t autotune_max = 0;      // tcp_rmem[2] / tcp_wmem[2]
};

enum class BufferAction {
  leave_autotuning,  // do not call setsockopt; the kernel's autotuning does better
  pin,               // SO_RCVBUF/SO_SNDBUF with `value`
  pin_forced,        // SO_RCVBUFFORCE/SO_SNDBUFFORCE with `value` (needs CAP_NET_ADMIN)
};

struct BufferDecision {
  BufferAction action = BufferAction::leave_autotuning;
  std::uint64_t requested = 0;  // the target, in setsockopt units (the kernel doubles it)
  std::uint64_t value = 0;      // what to pass to setsockopt
  std::string reason;           // plain words, for the log and `tcptune check`
};

// The setsockopt value for a bandwidth-delay product target: bandwidth x rtt. The kernel
// doubles it to cover its bookkeeping, so the usable window is about one BDP. Saturates at
// INT32_MAX, the largest value setsockopt takes.
std::uint64_t bdp_target(std::uint64_t bandwidth_bytes_per_s, Duration rtt);

// `explicit_size` is true for sndbuf/rcvbuf given in the policy (honoured even when small);
// false for a BDP target (left to autotuning when the kernel's default already covers it).
// `force_allowed`: whether SO_*BUFFORCE is expected to work (CAP_NET_ADMIN); the shim tries
// it and calls again with false when refused.
BufferDecision plan_buffer(std::uint64_t target, bool explicit_size, const BufferLimits& limits, bool force_allowed,
                           const char* direction /* "rcvbuf" or "sndbuf" */);

}  // namespace tcptune::config
