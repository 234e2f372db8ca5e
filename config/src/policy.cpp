#include "tcptune/config/policy.hpp"

#include "tcptune/config/escape.hpp"
#include "tcptune/config/units.hpp"

namespace tcptune::config {

std::string describe_keep_warm(const KeepWarm& keep_warm) {
  const std::size_t size = keep_warm.payload.size();
  // Linux's RTO is never below 200 ms: a longer interval is too late on short paths.
  constexpr Duration kRtoFloor = std::chrono::milliseconds(200);
  std::string when = "after half the connection's RTO without data sent (interval \"auto\": at least 100 ms on Linux)";
  if (keep_warm.interval.has_value()) {
    when = "after " + format_duration(*keep_warm.interval) + " without data sent";
    if (*keep_warm.interval >= kRtoFloor) {
      when += " (not below the 200 ms RTO floor: where the RTO is shorter, the window still restarts)";
    }
  }
  return "heartbeat of " + std::to_string(size) + (size == 1 ? " byte" : " bytes") + " (\"" +
         escape_for_display(keep_warm.payload, true) + "\") " + when + "; stops after " +
         format_duration(keep_warm.max_idle) + " without a write by the app";
}

Policy builtin_default_policy() {
  Policy policy;
  policy.source = "built-in default";
  policy.defaults.nodelay = NodelayMode::on;
  return policy;
}

Tuning overlay(const Tuning& base, const Tuning& rule) {
  Tuning out = base;
  auto take = [](auto& into, const auto& from) {
    if (from.has_value()) {
      into = from;
    }
  };
  take(out.nodelay, rule.nodelay);
  take(out.buffers, rule.buffers);
  take(out.override_app_buffers, rule.override_app_buffers);
  take(out.congestion, rule.congestion);
  take(out.keepalive, rule.keepalive);
  take(out.user_timeout, rule.user_timeout);
  take(out.notsent_lowat, rule.notsent_lowat);
  take(out.thin_linear_timeouts, rule.thin_linear_timeouts);
  take(out.quickack, rule.quickack);
  take(out.callsite, rule.callsite);
  take(out.tos, rule.tos);
  take(out.keep_warm, rule.keep_warm);
  out.sockopts.insert(out.sockopts.end(), rule.sockopts.begin(), rule.sockopts.end());
  return out;
}

}  // namespace tcptune::config
