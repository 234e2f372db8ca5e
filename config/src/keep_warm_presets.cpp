#include "tcptune/config/keep_warm_presets.hpp"

#include <array>

namespace tcptune::config {

namespace {

using namespace std::string_view_literals;

// Each is proven against a real server over the emulated link (tests/presets); one a server
// rejects is not listed.
constexpr std::array kPresets{
    KeepWarmPreset{"http1-client", "\r\n"sv, HeartbeatSide::client, Framing::http1_request, "HTTP/1.1",
                   "RFC 9112 section 2.2: a server SHOULD ignore at least one empty line (CRLF) received before a "
                   "request-line"},
    KeepWarmPreset{"redis-client", "\r\n"sv, HeartbeatSide::client, Framing::resp_request, "RESP",
                   "Redis inline commands: an empty line is no command, and redis-server skips it (networking.c, "
                   "processInlineBuffer)"},
    KeepWarmPreset{"stomp", "\n"sv, HeartbeatSide::both, Framing::stomp, "STOMP",
                   "STOMP 1.2, Heart-beating: an EOL is a heart-beat, and frames may be followed by EOLs"},
    // Type 8 (heartbeat), channel 0, payload size 0, frame-end 0xCE.
    KeepWarmPreset{"amqp091", "\x08\x00\x00\x00\x00\x00\x00\xce"sv, HeartbeatSide::both, Framing::amqp091, "AMQP 0-9-1",
                   "AMQP 0-9-1 section 4.2.7: the heartbeat frame, valid once the connection handshake is done"},
    KeepWarmPreset{"lines", "\n"sv, HeartbeatSide::both, Framing::lines, "a line protocol",
                   "NDJSON 1.0 section 3.2: a parser MAY ignore empty lines; for line protocols whose readers skip "
                   "them"},
};

}  // namespace

std::span<const KeepWarmPreset> keep_warm_presets() {
  return kPresets;
}

const KeepWarmPreset* find_keep_warm_preset(std::string_view name) {
  for (const KeepWarmPreset& preset : kPresets) {
    if (preset.name == name) {
      return &preset;
    }
  }
  return nullptr;
}

std::string keep_warm_preset_names() {
  std::string names;
  for (const KeepWarmPreset& preset : kPresets) {
    names += (names.empty() ? "" : ", ") + std::string(preset.name);
  }
  return names;
}

}  // namespace tcptune::config
