// Transfers held back by the receive window or the send buffer: TCP_INFO's chronographs
// (tcpi_busy_time, tcpi_rwnd_limited, tcpi_sndbuf_limited, Linux 4.10+) in conn_close say how
// long the sender had data to send and, of that, how long the peer's advertised window or its
// own send buffer stopped it. Below the bandwidth-delay product either one caps the rate at
// window / RTT. The receive window is the peer's to fix; the send buffer this end's.
#include <algorithm>
#include <cstdio>
#include <string>

#include "advise_detectors.hpp"
#include "tcptune/config/units.hpp"

namespace tcptune::cli {

namespace {

constexpr double kMinLimitedShare = 0.2;  // of the time busy sending
constexpr double kMinLimitedUs = 200000;  // and at least this long in all
// The window a receiver that leaves its buffer to autotuning advertises from the start (half of
// net.ipv4.tcp_rmem's default 128 KiB); it only grows from there.
constexpr double kAutotunedWindowBytes = 65536;

struct Limited {
  double busy_us = 0;
  double limited_us = 0;
  double rate_bps = 0;  // the largest delivery rate seen
  double rtt_us = 0;
};

bool app_pinned(const ObservedConnection& connection, const char* option) {
  const ObservedOption* found = connection.option(option);
  return found != nullptr && found->requested.rfind("app ", 0) == 0;
}

// An accepted socket inherits its listener's buffers, and its conn_open reports only what it does
// not inherit: the app's pin shows on the listener of the same process and address.
bool receiver_pinned(const ObservedConnection& receiver, const Observations& observations) {
  if (app_pinned(receiver, "rcvbuf")) {
    return true;
  }
  return std::any_of(
      observations.connections.begin(), observations.connections.end(), [&](const ObservedConnection& listener) {
        return listener.is_listener() && listener.pid == receiver.pid && listener.program == receiver.program &&
               listener.local == receiver.local && app_pinned(listener, "rcvbuf");
      });
}

// Bits per second as the policy writes a rate: "400Mbit".
std::string rate_text(double bps) {
  const double mbit = bps / 1e6;
  if (mbit >= 1000) {
    return std::to_string(static_cast<long long>(mbit / 1000 + 0.999)) + "Gbit";
  }
  return std::to_string(std::max<long long>(1, static_cast<long long>(mbit + 0.999))) + "Mbit";
}

std::string duration_text(double rtt_us) {
  return std::to_string(std::max<long long>(1, static_cast<long long>(rtt_us / 1000 + 0.5))) + "ms";
}

// A receiver whose log shows it leaves its buffer to autotuning, while less than autotuning's first
// window was in flight per round trip: the window was closed by a program that reads slowly, not
// too small for the path, and no buffer size changes that.
bool receiver_reads_slowly(const ObservedConnection& sender, const Observations& observations) {
  if (!sender.counterpart.has_value()) {
    return false;
  }
  const ObservedConnection& receiver = observations.connections[*sender.counterpart];
  const ObservedTcpInfo& info = *sender.tcp_info;
  const double rtt_us = info.min_rtt_us.value_or(info.rtt_us.value_or(0));
  if (receiver.supervised || receiver_pinned(receiver, observations) || !info.bytes_acked.has_value() ||
      info.busy_us.value_or(0) <= 0 || rtt_us <= 0) {
    return false;  // a supervised receiver's buffer calls are not seen
  }
  const double in_flight_bytes = static_cast<double>(*info.bytes_acked) / *info.busy_us * rtt_us;
  return in_flight_bytes < kAutotunedWindowBytes;
}

void find_limit(const AdviceInput& input, bool receive_window, std::vector<Finding>& out) {
  std::vector<const ObservedConnection*> held;
  for (const ObservedConnection& connection : input.observations.connections) {
    if (!connection.tcp_info.has_value()) {
      continue;
    }
    const ObservedTcpInfo& info = *connection.tcp_info;
    const std::optional<double> limited = receive_window ? info.rwnd_limited_us : info.sndbuf_limited_us;
    if (info.busy_us.has_value() && limited.has_value() && *limited >= kMinLimitedUs &&
        *limited >= kMinLimitedShare * *info.busy_us &&
        !(receive_window && receiver_reads_slowly(connection, input.observations))) {
      held.push_back(&connection);
    }
  }
  for (const std::vector<const ObservedConnection*>& group : group_connections(held)) {
    Limited sum;
    bool pinned = false;
    for (const ObservedConnection* connection : group) {
      const ObservedTcpInfo& info = *connection->tcp_info;
      sum.busy_us += *info.busy_us;
      sum.limited_us += receive_window ? *info.rwnd_limited_us : *info.sndbuf_limited_us;
      sum.rate_bps = std::max(sum.rate_bps, info.delivery_rate_bps.value_or(0));
      sum.rtt_us = std::max(sum.rtt_us, info.min_rtt_us.value_or(info.rtt_us.value_or(0)));
      if (receive_window) {
        // Without the receiver's log, whether it pins SO_RCVBUF is unknown; dropping a pin is the
        // fix that leaves autotuning in charge either way.
        pinned = pinned || !connection->counterpart.has_value() ||
                 receiver_pinned(input.observations.connections[*connection->counterpart], input.observations);
      } else {
        pinned = pinned || app_pinned(*connection, "sndbuf");
      }
    }
    const bool peer_log = std::all_of(group.begin(), group.end(), [](const ObservedConnection* connection) {
      return connection->counterpart.has_value();
    });
    Finding finding = new_finding(receive_window ? "receive-window-limited" : "send-buffer-limited", group);
    const AdviceScope scope = receive_window ? peer_scope_of(group, input.observations.connections) : scope_of(group);
    const std::string program = group.front()->program;
    const double share = sum.limited_us / sum.busy_us;
    finding.figures = {{"busy_s", sum.busy_us / 1e6},
                       {"limited_s", sum.limited_us / 1e6},
                       {"limited_share", share},
                       {"delivery_rate_mbit", sum.rate_bps / 1e6},
                       {"rtt_ms", sum.rtt_us / 1000}};
    char text[640];
    (void)std::snprintf(text, sizeof text,
                        "%llu connection(s) of %s sent for %.2f s, of which %.2f s (%.0f%%) %s; delivery rate %s at "
                        "RTT %s",
                        static_cast<unsigned long long>(finding.connections), program.c_str(), sum.busy_us / 1e6,
                        sum.limited_us / 1e6, share * 100,
                        receive_window ? "waiting for the peer's receive window (rwnd_limited)"
                                       : "with the send buffer full (sndbuf_limited)",
                        (config::format_size(static_cast<std::uint64_t>(sum.rate_bps / 8)) + "/s").c_str(),
                        format_ms(sum.rtt_us / 1000).c_str());
    finding.evidence = text;
    const std::string bandwidth = rate_text(4 * sum.rate_bps);
    finding.has_rule = true;
    finding.rule.scope = scope;
    if (pinned) {
      finding.rule.keys = {{"override_app_buffers", "true"}};
    } else {
      finding.rule.keys = {
          {"buffers", "{ bandwidth = \"" + bandwidth + "\", rtt = \"" + duration_text(sum.rtt_us) + "\" }"}};
    }
    const std::string what =
        pinned
            ? std::string("override_app_buffers = true (an app's own ") + (receive_window ? "SO_RCVBUF" : "SO_SNDBUF") +
                  " below the bandwidth-delay product is the usual cause; without it "
                  "autotuning sizes the buffer)"
            : "buffers = { bandwidth = \"" + bandwidth + "\", rtt = \"" + duration_text(sum.rtt_us) +
                  "\" } (4x the rate reached under the limit, at the measured RTT: set the "
                  "path's real bandwidth)";
    if (receive_window) {
      finding.tune = "peer";
      finding.title = "the receiver's window holds " + program + "'s transfers back";
      finding.cause = "the receiving end advertises a window below the bandwidth-delay product, so " + program +
                      " can have only that much in flight per round trip.";
      finding.fix = "on the receiving end (the peer: " + scope.describe() + "): " + what +
                    (peer_log ? "" : "; its log was not given, so its program is not named");
    } else {
      finding.title = program + "'s send buffer holds its transfers back";
      finding.cause = program +
                      "'s send buffer is below the bandwidth-delay product, so it cannot keep enough "
                      "in flight to fill the path.";
      finding.fix = what + " for " + scope.describe();
    }
    (void)std::snprintf(text, sizeof text,
                        "%.2f s of %.2f s sending were held by the %s; lifting it leaves the path's capacity as the "
                        "limit: up to %.2f s less (%.0f%% of the sending time), the rate up to %.1fx if the path "
                        "has the room",
                        sum.limited_us / 1e6, sum.busy_us / 1e6, receive_window ? "receive window" : "send buffer",
                        sum.limited_us / 1e6, share * 100, share < 1 ? 1 / (1 - share) : 10.0);
    finding.gain_arithmetic = text;
    finding.gain = "up to " + std::to_string(static_cast<int>(share * 100 + 0.5)) +
                   "% less time sending, as far as the path's bandwidth allows";
    finding.prove = ab_command(scope, input.policy_file);
    if (receive_window) {
      finding.prove += "  (run the receiver under it; measure the sender's throughput)";
    }
    out.push_back(std::move(finding));
  }
}

}  // namespace

void find_window_limits(const AdviceInput& input, std::vector<Finding>& out) {
  find_limit(input, /*receive_window=*/true, out);
  find_limit(input, /*receive_window=*/false, out);
}

}  // namespace tcptune::cli
