// Slow start after idle: the kernel restarted the congestion window of a connection silent for
// longer than its RTO, and the next message paid extra round trips (idle_restart records). The
// fix is keep_warm with the protocol preset the port names (docs/keep-warm.md), or BBR where no
// preset fits: the kernel never restarts BBR's window, but BBR paces a burst at its estimate.
// A supervised program (Go, static) gets BBR whatever its port: keep_warm needs the shim inside
// the process, and supervised mode refuses it.
#include <algorithm>
#include <array>
#include <cstdio>
#include <string>
#include <string_view>

#include "advise_detectors.hpp"
#include "advise_toml.hpp"

namespace tcptune::cli {

namespace {

constexpr std::uint64_t kMinRestarts = 2;
constexpr double kMaxIdleKeptWarmMs = 60000;  // keep_warm's default max_idle
constexpr std::uint64_t kInitialWindow = 10;  // segments: Linux's initial window, where a restart stops

// The window tcp_cwnd_restart leaves after `idle_ms` of silence: halved once per RTO of it beyond
// the first, not below the initial window (or the window itself, when smaller).
std::uint64_t window_after_restart(std::uint64_t cwnd, double idle_ms, double rto_ms) {
  const std::uint64_t restart = std::min(kInitialWindow, cwnd);
  for (double delta = idle_ms - rto_ms; rto_ms > 0 && delta > 0 && cwnd > restart; delta -= rto_ms) {
    cwnd >>= 1U;
  }
  return std::max(cwnd, restart);
}

// Round trips slow start needs to send `segments` from a window of `cwnd`, doubling each round
// (the shim's arithmetic for the `extra_round_trips` of its records).
std::uint64_t slow_start_round_trips(double segments, std::uint64_t cwnd) {
  std::uint64_t rounds = 1;
  for (double sent = static_cast<double>(std::max<std::uint64_t>(cwnd, 1)), window = sent;
       sent < segments && rounds < 64; ++rounds) {
    window *= 2;
    sent += window;
  }
  return rounds;
}

// A supervised connection's records do not see the writes: a message is taken as its data
// segments per burst (TCP_INFO's data_segs_out over its silences plus one, each restart being one
// silence); 0 when its conn_close lacks them.
double segments_per_burst(const ObservedConnection& connection) {
  if (!connection.tcp_info.has_value() || !connection.tcp_info->data_segs_out.has_value()) {
    return 0;
  }
  const std::uint64_t silences =
      std::max<std::uint64_t>(connection.idle_restart_count, connection.idle_restarts.size());
  return static_cast<double>(*connection.tcp_info->data_segs_out) / static_cast<double>(silences + 1);
}

// The extra round trips of a restart the supervisor saw between two polls, for a message of
// `segments`: the window it restarted from is at most what the kernel's halving leaves after the
// silence recorded (which lasted at least that long) and at most the window at the next poll
// (grown since), so the estimate errs low; a message that fits that window costs nothing.
std::uint64_t estimated_extra_round_trips(const ObservedIdleRestart& restart, double segments) {
  if (segments <= 0 || restart.cwnd_before == 0) {
    return 0;
  }
  const std::uint64_t restarted = std::min(window_after_restart(restart.cwnd_before, restart.idle_ms, restart.rto_ms),
                                           std::max<std::uint64_t>(restart.cwnd_after, 1));
  const std::uint64_t cold = slow_start_round_trips(segments, restarted);
  const std::uint64_t warm = slow_start_round_trips(segments, restart.cwnd_before);
  return cold > warm ? cold - warm : 0;
}

struct PortPreset {
  std::uint16_t port;
  std::string_view protocol;
  bool client_only;
  std::size_t heartbeat_bytes;
};
// The well-known ports of the protocols keep_warm has a preset for.
constexpr std::array<PortPreset, 7> kPortPresets{{{80, "http1-client", true, 2},
                                                  {8080, "http1-client", true, 2},
                                                  {8000, "http1-client", true, 2},
                                                  {6379, "redis-client", true, 2},
                                                  {61613, "stomp", false, 1},
                                                  {5672, "amqp091", false, 8},
                                                  {15672, "http1-client", true, 2}}};

const PortPreset* preset_for(const AdviceScope& scope) {
  if (scope.ports.size() != 1) {
    return nullptr;
  }
  for (const PortPreset& preset : kPortPresets) {
    if (preset.port == scope.ports.front() && (!preset.client_only || scope.role == "client")) {
      return &preset;
    }
  }
  return nullptr;
}

// `heartbeat = "..."` for text, `heartbeat_hex = "..."` for bytes a TOML string cannot hold
// as they are (beyond UTF-8, or control characters other than tab, newline and return).
std::string heartbeat_key(const std::string& bytes) {
  const bool text = std::all_of(bytes.begin(), bytes.end(), [](char c) {
    const auto byte = static_cast<unsigned char>(c);
    return (byte >= 0x20 && byte < 0x7f) || c == '\n' || c == '\r' || c == '\t';
  });
  if (text) {
    return "heartbeat = " + toml_string(bytes);
  }
  std::string hex;
  for (const char c : bytes) {
    char digits[3];
    (void)std::snprintf(digits, sizeof digits, "%02x", static_cast<unsigned char>(c));
    hex += digits;
  }
  return "heartbeat_hex = \"" + hex + "\"";
}

}  // namespace

void find_slow_start_after_idle(const AdviceInput& input, std::vector<Finding>& out) {
  std::vector<const ObservedConnection*> restarted;
  for (const ObservedConnection& connection : input.observations.connections) {
    if (!connection.idle_restarts.empty()) {
      restarted.push_back(&connection);
    }
  }
  for (const std::vector<const ObservedConnection*>& group : group_connections(restarted)) {
    std::vector<ObservedIdleRestart> restarts;
    double extra_ms = 0;
    std::uint64_t extra_round_trips = 0;
    std::uint64_t estimated = 0;  // restarts whose round trips are estimated (supervised)
    double estimated_segments = 0;
    bool supervised = false;
    for (const ObservedConnection* connection : group) {
      supervised = supervised || connection->supervised;
      const double segments = segments_per_burst(*connection);
      for (ObservedIdleRestart restart : connection->idle_restarts) {
        if (!restart.round_trips_known) {
          restart.extra_round_trips = estimated_extra_round_trips(restart, segments);
          ++estimated;
          estimated_segments = std::max(estimated_segments, segments);
        }
        extra_ms += static_cast<double>(restart.extra_round_trips) * restart.rtt_ms;
        extra_round_trips += restart.extra_round_trips;
        restarts.push_back(restart);
      }
    }
    double idle_ms = 0;
    double kept_warm_idle_ms = 0;
    double rtt_ms = 0;
    double rto_ms = 0;
    std::uint64_t cwnd_before = 0;
    std::uint64_t cwnd_after = 0;
    for (const ObservedIdleRestart& restart : restarts) {
      idle_ms += restart.idle_ms;
      kept_warm_idle_ms += std::min(restart.idle_ms, kMaxIdleKeptWarmMs);
      rtt_ms += restart.rtt_ms;
      rto_ms += restart.rto_ms;
      cwnd_before += restart.cwnd_before;
      cwnd_after += restart.cwnd_after;
    }
    if (restarts.size() < kMinRestarts || extra_round_trips == 0) {
      continue;  // a restart that cost no round trip changes nothing
    }
    const auto count = static_cast<double>(restarts.size());
    rtt_ms /= count;
    rto_ms /= count;
    Finding finding = new_finding("slow-start-after-idle", group);
    const AdviceScope scope = scope_of(group);
    const std::string program = group.front()->program;
    finding.title = "the congestion window of " + program + "'s connections restarts after each silence";
    finding.cause =
        "after a silence longer than the RTO the kernel shrinks the congestion window back "
        "(net.ipv4.tcp_slow_start_after_idle), so the next message pays extra round trips of slow start.";
    finding.figures = {{"idle_restarts", count},
                       {"extra_round_trips", static_cast<double>(extra_round_trips)},
                       {"rtt_ms", rtt_ms},
                       {"rto_ms", rto_ms},
                       {"mean_idle_ms", idle_ms / count},
                       {"mean_cwnd_before", static_cast<double>(cwnd_before) / count},
                       {"mean_cwnd_after", static_cast<double>(cwnd_after) / count},
                       {"extra_ms_total", extra_ms},
                       {"estimated_restarts", static_cast<double>(estimated)}};
    char text[512];
    (void)std::snprintf(text, sizeof text,
                        "%zu idle restarts on %llu connection(s): after %s of silence on average (RTO %s), the window "
                        "went from %.0f to %.0f segments, %llu extra round trips of %s in all",
                        restarts.size(), static_cast<unsigned long long>(finding.connections),
                        format_ms(idle_ms / count).c_str(), format_ms(rto_ms).c_str(),
                        static_cast<double>(cwnd_before) / count, static_cast<double>(cwnd_after) / count,
                        static_cast<unsigned long long>(extra_round_trips), format_ms(rtt_ms).c_str());
    finding.evidence = text;
    std::string estimate;
    if (estimated != 0) {
      (void)std::snprintf(text, sizeof text,
                          "%llu of the restarts seen by tcptune's supervisor, which does not see the writes: their "
                          "extra round trips are estimated for messages of %.0f segments (the connection's data "
                          "segments per burst) from the window the kernel's halving leaves after the silence",
                          static_cast<unsigned long long>(estimated), estimated_segments);
      estimate = text;
      finding.evidence += "; " + estimate;
    }
    (void)std::snprintf(text, sizeof text, "%llu extra round trips x RTT %s = %s over %zu messages, %s per message%s",
                        static_cast<unsigned long long>(extra_round_trips), format_ms(rtt_ms).c_str(),
                        format_ms(extra_ms).c_str(), restarts.size(), format_ms(extra_ms / count).c_str(),
                        estimated != 0 ? " (round trips estimated, see the evidence)" : "");
    finding.gain_arithmetic = text;
    finding.has_rule = true;
    finding.rule.scope = scope;
    const double heartbeats = rto_ms > 0 ? kept_warm_idle_ms / rto_ms : 0;
    const std::string bbr_cost =
        "congestion = \"bbr\": no byte added; the kernel never restarts BBR's window, but BBR paces a burst at its "
        "bandwidth estimate, so a message takes longer than with a warm cubic window (131 ms against 91 ms for 60 KB "
        "over 180 ms, docs/benchmarks.md); BBR must be in net.ipv4.tcp_allowed_congestion_control or the process "
        "needs CAP_NET_ADMIN";
    // keep_warm needs the shim in the process: supervised mode refuses it (docs/supervised.md). Its
    // heartbeat must be bytes the peer skips: a preset's, where the port names the protocol, or
    // those the user names (--heartbeat); a log cannot show them.
    std::string keep_warm;
    std::string keep_warm_source;
    std::size_t heartbeat_size = 0;
    if (const PortPreset* preset = supervised ? nullptr : preset_for(scope)) {
      keep_warm = "{ protocol = \"" + std::string(preset->protocol) + "\" }";
      keep_warm_source = "port " + std::to_string(scope.ports.front()) + " speaks it";
      heartbeat_size = preset->heartbeat_bytes;
    } else if (!supervised && !input.heartbeat.empty()) {
      keep_warm = "{ " + heartbeat_key(input.heartbeat) + " }";
      keep_warm_source = "--heartbeat names bytes its peers skip between messages";
      heartbeat_size = input.heartbeat.size();
    }
    if (!keep_warm.empty()) {
      const double bytes = heartbeats * static_cast<double>(heartbeat_size);
      finding.rule.keys = {{"keep_warm", keep_warm}};
      (void)std::snprintf(text, sizeof text,
                          "keep_warm = %s for %s (%s): a heartbeat the protocol skips, once per RTO of silence, keeps "
                          "the window; about %.0f heartbeats (%.0f bytes) for the %s of silence recorded (one per RTO "
                          "%s, none after 60 s without a write)",
                          keep_warm.c_str(), scope.describe().c_str(), keep_warm_source.c_str(), heartbeats, bytes,
                          format_ms(kept_warm_idle_ms).c_str(), format_ms(rto_ms).c_str());
      finding.fix = text;
      finding.gain = "about " + format_ms(extra_ms / count) + " less for each message after a silence (" +
                     format_ms(extra_ms) +
                     " over the messages recorded), as net.ipv4.tcp_slow_start_after_idle=0 gives";
      finding.alternatives = {bbr_cost};
    } else {
      finding.rule.keys = {{"congestion", "\"bbr\""}};
      finding.fix =
          "congestion = \"bbr\" for " + scope.describe() +
          (supervised ? ": " + program +
                            " runs supervised (tcptune's shim cannot enter it, as for a Go or static program), "
                            "where keep_warm is refused; BBR is set from outside"
                      : std::string(": no port of a protocol keep_warm has a preset for, so no heartbeat bytes "
                                    "are known to be safe (tcptune advise --heartbeat BYTES names them)"));
      finding.gain = "most of the " + format_ms(extra_ms / count) +
                     " each message after a silence loses (BBR paces the burst, so less than the sysctl fix gives)";
      (void)std::snprintf(text, sizeof text,
                          "keep_warm with the protocol's own no-op (keep_warm = { heartbeat = ... } or a protocol "
                          "preset): the full gain, at about %.0f heartbeats for the silence recorded; only bytes the "
                          "peer's protocol skips between messages (docs/keep-warm.md)",
                          heartbeats);
      const std::string sysctl =
          "net.ipv4.tcp_slow_start_after_idle=0 in the namespace: the full gain for every program, needs root there";
      finding.alternatives = {bbr_cost};
      if (!supervised) {
        finding.alternatives.emplace_back(text);
      }
      finding.alternatives.push_back(sysctl);
    }
    finding.prove = ab_command(scope, input.policy_file);
    out.push_back(std::move(finding));
  }
}

}  // namespace tcptune::cli
