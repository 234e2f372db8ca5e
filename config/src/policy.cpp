#include "tcptune/config/policy.hpp"

#include "tcptune/config/escape.hpp"
#include "tcptune/config/tuning_keys.hpp"
#include "tcptune/config/units.hpp"

namespace tcptune::config {

std::string describe_keep_warm(const KeepWarm& keep_warm) {
  const std::size_t size = keep_warm.payload.size();
  // Linux's RTO is never below 200 ms: a longer interval is too late on short paths.
  constexpr Duration kRtoFloor = std::chrono::milliseconds(200);
  std::string when =
      "after the connection's RTO less 50 ms without data sent (interval \"auto\": one heartbeat per RTO of "
      "silence, at least 150 ms on Linux)";
  if (keep_warm.interval.has_value()) {
    when = "after " + format_duration(*keep_warm.interval) + " without data sent";
    if (*keep_warm.interval >= kRtoFloor) {
      when += " (not below the 200 ms RTO floor: where the RTO is shorter, the window still restarts)";
    }
  }
  std::string what = "heartbeat of " + std::to_string(size) + (size == 1 ? " byte" : " bytes") + " (\"" +
                     escape_for_display(keep_warm.payload, true) + "\")";
  if (!keep_warm.protocol.empty()) {
    what = "protocol " + keep_warm.protocol + ": " + what;
  }
  switch (keep_warm.side) {
    case HeartbeatSide::both: break;
    case HeartbeatSide::client: what += ", only on connections the program opens (client side),"; break;
    case HeartbeatSide::server: what += ", only on connections the program accepts (server side),"; break;
  }
  return what + " " + when + "; stops after " + format_duration(keep_warm.max_idle) + " without a write by the app";
}

std::optional<std::string> heartbeat_side_refusal(const KeepWarm& keep_warm, Role socket_side) {
  if (keep_warm.side == HeartbeatSide::both) {
    return std::nullopt;
  }
  const bool from_client = keep_warm.side == HeartbeatSide::client;
  const Role allowed = from_client ? Role::client : Role::server;
  if (socket_side == allowed) {
    return std::nullopt;
  }
  const std::string name = keep_warm.protocol.empty() ? "these" : keep_warm.protocol;
  const std::string valid = name + " heartbeats are only valid from the " + (from_client ? "client" : "server");
  if (socket_side == Role::any) {
    return valid + ", and this connection's side is not known (it was connected before the shim saw it); not kept warm";
  }
  return valid + "; not kept warm on " + (from_client ? "accepted sockets" : "connections the program opens");
}

Policy builtin_default_policy() {
  Policy policy;
  policy.source = "built-in default";
  policy.defaults.nodelay = NodelayMode::on_wait;
  return policy;
}

Tuning overlay(const Tuning& base, const Tuning& rule) {
  Tuning out = base;
  for (const TuningKey& key : tuning_keys()) {
    key.overlay(out, rule);
  }
  return out;
}

}  // namespace tcptune::config
