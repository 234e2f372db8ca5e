// Connections reset on the first write after a long silence: a middlebox (NAT, firewall, load
// balancer) forgot the idle connection, so the peer's side answers the next segment with a reset,
// and that write or the one after it fails with ECONNRESET or EPIPE. TCP keepalive probes sent
// more often than the middlebox's idle timeout keep its state. Seen in write records (`[log]
// trace_writes = true`, or a failing call slow enough for `slow_write`), which carry errno and
// time; conn_close counts write errors without either.
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <string>

#include "advise_detectors.hpp"

namespace tcptune::cli {

namespace {

constexpr double kMinIdleGapS = 10;         // shorter silences are no middlebox's timeout
constexpr std::size_t kWritesAfterGap = 2;  // the reset fails the first write or the next one
constexpr double kKeepaliveIdleMaxS = 7200;

// The silence before the failed write, when the write failed with a reset after one; 0 otherwise.
double reset_gap_s(const ObservedConnection& connection) {
  const std::vector<ObservedWrite>& writes = connection.write_records;
  for (std::size_t i = 0; i < writes.size(); ++i) {
    if (writes[i].outcome != "error" || (writes[i].error != ECONNRESET && writes[i].error != EPIPE)) {
      continue;
    }
    // The gap ending at this write or at one of the few before it.
    for (std::size_t back = 0; back <= kWritesAfterGap && back < i; ++back) {
      const double gap = writes[i - back].at_s - writes[i - back - 1].at_s;
      if (gap >= kMinIdleGapS) {
        return gap;
      }
    }
    if (i == 0 && connection.opened && writes[0].at_s - connection.opened_at_s >= kMinIdleGapS) {
      return writes[0].at_s - connection.opened_at_s;
    }
    return 0;  // the first reset decides: later writes fail because of it
  }
  return 0;
}

// The peer's own log shows it closed the connection before the write: its idle timeout, not a
// middlebox's, which keepalive does not change.
bool peer_closed_first(const ObservedConnection& connection, const Observations& observations) {
  if (!connection.counterpart.has_value()) {
    return false;
  }
  const ObservedConnection& peer = observations.connections[*connection.counterpart];
  const auto failed = std::find_if(connection.write_records.begin(), connection.write_records.end(),
                                   [](const ObservedWrite& write) { return write.outcome == "error"; });
  return peer.closed && !peer.open_at_exit && failed != connection.write_records.end() &&
         peer.closed_at_s <= failed->at_s;
}

}  // namespace

void find_resets_after_idle(const AdviceInput& input, std::vector<Finding>& out) {
  std::vector<const ObservedConnection*> reset;
  for (const ObservedConnection& connection : input.observations.connections) {
    const double gap = reset_gap_s(connection);
    if (gap > 0 && !peer_closed_first(connection, input.observations)) {
      reset.push_back(&connection);
    }
  }
  for (const std::vector<const ObservedConnection*>& group : group_connections(reset)) {
    double shortest = 0;
    for (const ObservedConnection* connection : group) {
      const double gap = reset_gap_s(*connection);
      shortest = shortest == 0 ? gap : std::min(shortest, gap);
    }
    const double idle_s =
        std::clamp(static_cast<double>(static_cast<long long>(shortest / 2)), 1.0, kKeepaliveIdleMaxS);
    const double interval_s = std::clamp(static_cast<double>(static_cast<long long>(idle_s / 4)), 1.0, 30.0);
    Finding finding = new_finding("reset-after-idle", group);
    const AdviceScope scope = scope_of(group);
    const std::string program = group.front()->program;
    finding.title = program + "'s connections are reset on the first write after a long silence";
    finding.cause =
        "a middlebox on the path (NAT, firewall, load balancer) drops the state of a connection silent "
        "for longer than its idle timeout, so the next write meets a reset.";
    finding.figures = {{"reset_connections", static_cast<double>(group.size())},
                       {"shortest_idle_before_reset_s", shortest},
                       {"keepalive_idle_s", idle_s}};
    char text[512];
    (void)std::snprintf(text, sizeof text,
                        "%zu connection(s) failed a write with ECONNRESET or EPIPE after %.0f s or more without "
                        "writing (the shortest such silence); the middlebox's timeout is at most that",
                        group.size(), shortest);
    finding.evidence = text;
    finding.has_rule = true;
    finding.rule.scope = scope;
    (void)std::snprintf(text, sizeof text, "{ idle = \"%.0fs\", interval = \"%.0fs\", count = 4 }", idle_s, interval_s);
    finding.rule.keys = {{"keepalive", text}};
    finding.fix = "keepalive = " + std::string(text) + " for " + scope.describe() +
                  ": a probe after half the shortest silence that ended in a reset keeps the middlebox's state";
    (void)std::snprintf(text, sizeof text,
                        "%zu reset(s) avoided, each a failed request, a new connection (a handshake, 1 RTT; TLS "
                        "adds 1-2) and a retry if the app makes one; the probes cost 2 small packets per %.0f s of "
                        "silence per connection",
                        group.size(), idle_s);
    finding.gain_arithmetic = text;
    finding.gain = "no reset after a silence: the connections stay usable";
    finding.alternatives = {
        "if the peer itself closes idle connections (its keep-alive timeout), keepalive does not "
        "help: give both ends' logs, and advise leaves out a connection whose peer closed first"};
    finding.prove = ab_command(scope, input.policy_file) + "  (with silences as long as production's)";
    out.push_back(std::move(finding));
  }
}

}  // namespace tcptune::cli
