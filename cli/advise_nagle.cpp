// Nagle with delayed ACK: a small write waits for the ACK of the one before it (Nagle), and the
// peer delays that ACK by about 40 ms (Linux's minimum delayed-ACK time) because it waits for the
// rest of the message before answering. The sender's sampled ack latency then sits near 40 ms
// above the path's RTT while its writes are smaller than a segment.
#include <algorithm>
#include <cstdio>
#include <string>

#include "advise_detectors.hpp"

namespace tcptune::cli {

namespace {

constexpr double kMinAckStallUs = 25000;  // ack p50 this far above the RTT floor: a delayed ACK
constexpr double kMinAckP50Us = 30000;    // Linux delays an ACK 40 ms at least (TCP_DELACK_MIN)
constexpr std::uint64_t kMinAckSamples = 3;
constexpr std::uint64_t kDefaultMss = 1448;    // 1500-byte packets with timestamps
constexpr double kMostSegmentsPerSecond = 25;  // one per delayed ACK (40 ms)

enum class Nagle { on, off, unknown };

Nagle nagle_state(const ObservedConnection& connection) {
  const ObservedOption* option = connection.option("nodelay");
  if (option == nullptr || option->effective.empty()) {
    return Nagle::unknown;  // the policy left it alone ("keep"), or supervised: the app's choice
  }
  return option->effective == "0" ? Nagle::on : Nagle::off;
}

double rtt_floor_us(const ObservedConnection& connection) {
  if (!connection.tcp_info.has_value()) {
    return 0;
  }
  const ObservedTcpInfo& info = *connection.tcp_info;
  // min_rtt is the path's; the smoothed RTT of such a connection carries the delayed ACKs too.
  return info.min_rtt_us.value_or(info.rtt_us.value_or(0));
}

bool stalls_on_delayed_acks(const ObservedConnection& connection) {
  if (connection.is_listener() || !connection.writes_measured || connection.writes < 2 ||
      connection.ack_count < kMinAckSamples || nagle_state(connection) == Nagle::off) {
    return false;
  }
  const std::uint64_t mss =
      connection.tcp_info.has_value() ? connection.tcp_info->mss.value_or(kDefaultMss) : kDefaultMss;
  if (connection.bytes / connection.writes >= std::max<std::uint64_t>(mss, 1)) {
    return false;  // full segments go out whatever Nagle says
  }
  // Held behind delayed ACKs, a connection sends at most about one segment per 40 ms; one that sent
  // faster is a stream, whose acks wait behind its own queue instead.
  if (connection.duration_s > 0 && static_cast<double>(connection.bytes) / connection.duration_s >
                                       kMostSegmentsPerSecond * static_cast<double>(mss)) {
    return false;
  }
  return connection.ack_p50_us >= kMinAckP50Us && connection.ack_p50_us - rtt_floor_us(connection) >= kMinAckStallUs;
}

double median(std::vector<double> values) {
  if (values.empty()) {
    return 0;
  }
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

bool app_set_nodelay(const std::vector<const ObservedConnection*>& group) {
  return std::any_of(group.begin(), group.end(), [](const ObservedConnection* connection) {
    const ObservedOption* option = connection->option("nodelay");
    return option != nullptr && option->note.find("the app set it itself") != std::string::npos;
  });
}

// Of the group's peers whose logs were given, those already tuned (TCP_NODELAY on): tuning them
// did not help, since this end holds its replies back.
std::uint64_t tuned_peers(const std::vector<const ObservedConnection*>& group, const Observations& observations) {
  std::uint64_t count = 0;
  for (const ObservedConnection* connection : group) {
    if (connection->counterpart.has_value() &&
        nagle_state(observations.connections[*connection->counterpart]) == Nagle::off) {
      ++count;
    }
  }
  return count;
}

}  // namespace

void find_nagle_delayed_ack(const AdviceInput& input, std::vector<Finding>& out) {
  std::vector<const ObservedConnection*> stalled;
  for (const ObservedConnection& connection : input.observations.connections) {
    if (stalls_on_delayed_acks(connection)) {
      stalled.push_back(&connection);
    }
  }
  for (const std::vector<const ObservedConnection*>& group : group_connections(stalled)) {
    Finding finding = new_finding("nagle-delayed-ack", group);
    std::vector<double> ack_p50;
    std::vector<double> floors;
    std::uint64_t bytes = 0;
    std::uint64_t acks = 0;
    bool nagle_known_on = false;
    for (const ObservedConnection* connection : group) {
      ack_p50.push_back(connection->ack_p50_us / 1000);
      floors.push_back(rtt_floor_us(*connection) / 1000);
      bytes += connection->bytes;
      acks += connection->ack_count;
      nagle_known_on = nagle_known_on || nagle_state(*connection) == Nagle::on;
    }
    const double ack_ms = median(ack_p50);
    const double floor_ms = median(floors);
    const double stall_ms = ack_ms - floor_ms;
    const double average_write = finding.writes == 0 ? 0 : static_cast<double>(bytes) / static_cast<double>(finding.writes);
    finding.figures = {{"ack_latency_p50_ms", ack_ms},
                       {"rtt_floor_ms", floor_ms},
                       {"stall_per_exchange_ms", stall_ms},
                       {"average_write_bytes", average_write},
                       {"ack_samples", static_cast<double>(acks)}};
    const AdviceScope scope = scope_of(group);
    const std::string program = group.front()->program;
    const bool server = group.front()->role == "server";
    finding.title = "Nagle holds " + program + "'s small writes behind the peer's delayed ACK";
    finding.cause = program +
                    " writes its messages in small parts with Nagle on, so each part after the first "
                    "waits for the ACK of the one before, which the peer delays by about 40 ms while it waits for "
                    "the rest of the message.";
    char text[512];
    (void)std::snprintf(text, sizeof text,
                        "%llu connection(s), %llu writes of %.0f bytes on average (under one segment); TCP_NODELAY %s; "
                        "ack latency p50 %s against an RTT floor of %s over %llu sampled writes",
                        static_cast<unsigned long long>(finding.connections),
                        static_cast<unsigned long long>(finding.writes), average_write,
                        nagle_known_on ? "off (effective 0)" : "not set by the policy (the app's own choice)",
                        format_ms(ack_ms).c_str(), format_ms(floor_ms).c_str(), static_cast<unsigned long long>(acks));
    finding.evidence = text;
    if (const std::uint64_t tuned = tuned_peers(group, input.observations); tuned != 0) {
      finding.tune = "peer";
      finding.evidence += "; the " + std::string(server ? "clients" : "servers") + " on the other end (" +
                          std::to_string(tuned) +
                          " connection(s) in the logs given) already have TCP_NODELAY on, which cannot help: it is " +
                          program + " that holds its " + (server ? "replies" : "requests") + " back";
      finding.cause += " Tuning the other end alone leaves this stall: tune " + program + ", the peer of those logs.";
    } else if (std::none_of(group.begin(), group.end(),
                            [](const ObservedConnection* connection) { return connection->counterpart.has_value(); })) {
      finding.evidence += "; the other end's log was not given: if it writes its " +
                          std::string(server ? "requests" : "replies") +
                          " in parts too, it needs the same rule (run advise on both ends' logs)";
    }
    finding.has_rule = true;
    finding.rule.scope = scope;
    const bool force = app_set_nodelay(group);
    finding.rule.keys = {{"nodelay", force ? "\"force\"" : "\"on\""}};
    finding.fix = std::string("nodelay = \"") + (force ? "force" : "on") + "\" for " + scope.describe() +
                  (force ? " (\"force\": the app turns TCP_NODELAY off itself)" : "") + ": each write goes out at once";
    (void)std::snprintf(text, sizeof text,
                        "ack p50 %s - RTT floor %s = %s saved per exchange that ends in a small write; at least half "
                        "of the %llu sampled writes (those at or above the p50) waited that long: >= %llu x %s = %s",
                        format_ms(ack_ms).c_str(), format_ms(floor_ms).c_str(), format_ms(stall_ms).c_str(),
                        static_cast<unsigned long long>(acks), static_cast<unsigned long long>((acks + 1) / 2),
                        format_ms(stall_ms).c_str(), format_ms(stall_ms * static_cast<double>((acks + 1) / 2)).c_str());
    finding.gain_arithmetic = text;
    finding.gain = "about " + format_ms(stall_ms) +
                   " less per request/response exchange (the ack latency p50 falls to "
                   "about the RTT, " +
                   format_ms(floor_ms) + ")";
    finding.alternatives = {
        "nodelay = \"on-wait\" (the built-in default) pushes the held part when the writing "
        "thread waits for input, and keeps Nagle's coalescing for streams of small writes; it "
        "cannot see waits on a futex, io_uring or another thread's read (docs/policy.md)"};
    finding.prove = ab_command(scope, input.policy_file);
    out.push_back(std::move(finding));
  }
}

}  // namespace tcptune::cli
