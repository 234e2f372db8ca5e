#include "tcptune/config/buffer_plan.hpp"

#include <chrono>
#include <limits>

#include "tcptune/config/units.hpp"

namespace tcptune::config {

// The kernel doubles every SO_SNDBUF/SO_RCVBUF value (half for its own skb bookkeeping), so a
// request of one BDP gives a usable window of about one BDP. Autotuning's numbers
// (tcp_rmem/tcp_wmem) are already in kernel bytes, so they are compared against 2 x value.
std::uint64_t bdp_target(std::uint64_t bandwidth_bytes_per_s, Duration rtt) {
  const double seconds = std::chrono::duration<double>(rtt).count();
  const double bytes = static_cast<double>(bandwidth_bytes_per_s) * seconds;
  // setsockopt takes an int, so larger products (an absurd rate, or a huge measured rtt with
  // rtt = "auto") saturate there; that also keeps the conversion below in range.
  constexpr std::uint64_t kLargest = std::numeric_limits<std::int32_t>::max();
  if (!(bytes < static_cast<double>(kLargest))) {
    return kLargest;
  }
  const auto whole = static_cast<std::uint64_t>(bytes);
  const std::uint64_t rounded_up = static_cast<double>(whole) < bytes ? whole + 1 : whole;  // no libm in the shim
  return rounded_up < 1 ? 1 : rounded_up;
}

BufferDecision plan_buffer(std::uint64_t target, bool explicit_size, const BufferLimits& limits, bool force_allowed,
                           const char* direction) {
  const std::string name = direction;
  const std::string sysctl = name == "rcvbuf" ? "net.core.rmem_max" : "net.core.wmem_max";
  BufferDecision decision;
  decision.requested = target;
  const std::string what = name + " " + format_size(target) + " requested";
  if (!explicit_size && limits.autotune_default != 0 && 2 * target <= limits.autotune_default) {
    decision.reason = what + "; the kernel's default " + format_size(limits.autotune_default) +
                      " already covers it, so autotuning stays on";
    return decision;
  }
  if (limits.core_max == 0 || target <= limits.core_max) {
    decision.action = BufferAction::pin;
    decision.value = target;
    decision.reason = what + "; pinned (the kernel doubles it to " + format_size(2 * target) + ")";
    return decision;
  }
  if (force_allowed) {
    decision.action = BufferAction::pin_forced;
    decision.value = target;
    decision.reason = what + "; above " + sysctl + " (" + format_size(limits.core_max) +
                      "), pinned with CAP_NET_ADMIN (SO_" + (name == "rcvbuf" ? "RCV" : "SND") + "BUFFORCE)";
    return decision;
  }
  // Clamped: pin the ceiling only if it beats what autotuning can reach on its own.
  if (2 * limits.core_max > limits.autotune_max) {
    decision.action = BufferAction::pin;
    decision.value = limits.core_max;
    decision.reason = what + "; " + sysctl + " caps it at " + format_size(limits.core_max) +
                      ", still above autotuning's ceiling " + format_size(limits.autotune_max) + ", so pinned there";
    return decision;
  }
  decision.reason = what + "; " + sysctl + " caps it at " + format_size(limits.core_max) + "; autotuning can reach " +
                    format_size(limits.autotune_max) + ", so autotuning stays on";
  return decision;
}

}  // namespace tcptune::config
