// Named keep_warm heartbeats: the in-band no-op a protocol itself defines, and the side that may
// send it. `keep_warm = { protocol = "http1-client" }` spares the policy author from choosing
// bytes, where a wrong choice corrupts the peer's view of the stream.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "tcptune/config/policy.hpp"

namespace tcptune::config {

struct KeepWarmPreset {
  std::string_view name;
  std::string_view payload;
  HeartbeatSide side;
  Framing framing;            // how the shim finds where the app's messages end
  std::string_view protocol;  // for messages: "HTTP/1.1", "STOMP"
  std::string_view source;    // where the protocol lets the receiver skip these bytes
};

// Every preset, in the order the table of docs/keep-warm.md lists them.
std::span<const KeepWarmPreset> keep_warm_presets();

// The preset called `name`, or nullptr.
const KeepWarmPreset* find_keep_warm_preset(std::string_view name);

// "http1-client, redis-client, ...", for the error that names an unknown one.
std::string keep_warm_preset_names();

}  // namespace tcptune::config
