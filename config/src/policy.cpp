#include "tcptune/config/policy.hpp"

namespace tcptune::config {

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
