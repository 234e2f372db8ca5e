// Loss-bound paths: retransmissions (TCP_INFO's total_retrans in conn_close) make a share of the
// data segments sent that only a lossy path explains. tcptune cannot fix a path; the finding
// says so, so that nobody tunes sockets for it.
#include <cstdio>
#include <string>

#include "advise_detectors.hpp"

namespace tcptune::cli {

namespace {

constexpr double kMinRetransmitShare = 0.02;  // 2% of segments: far above a healthy path's
constexpr std::uint64_t kMinRetransmits = 20;
constexpr std::uint64_t kDefaultMss = 1448;

// Data segments sent: TCP_INFO's count, else the bytes acknowledged over the MSS.
double segments_sent(const ObservedTcpInfo& info) {
  if (info.data_segs_out.has_value()) {
    return static_cast<double>(*info.data_segs_out);
  }
  const std::uint64_t mss = info.mss.value_or(kDefaultMss);
  return info.bytes_acked.has_value() && mss != 0 ? static_cast<double>(*info.bytes_acked) / static_cast<double>(mss)
                                                  : 0;
}

}  // namespace

void find_loss_bound(const AdviceInput& input, std::vector<Finding>& out) {
  std::vector<const ObservedConnection*> lossy;
  for (const ObservedConnection& connection : input.observations.connections) {
    if (!connection.tcp_info.has_value()) {
      continue;
    }
    const std::uint64_t retransmits = connection.tcp_info->retransmits.value_or(0);
    const double segments = segments_sent(*connection.tcp_info);
    if (retransmits >= kMinRetransmits && segments > 0 &&
        static_cast<double>(retransmits) >= kMinRetransmitShare * segments) {
      lossy.push_back(&connection);
    }
  }
  for (const std::vector<const ObservedConnection*>& group : group_connections(lossy)) {
    double retransmits = 0;
    double segments = 0;
    for (const ObservedConnection* connection : group) {
      retransmits += static_cast<double>(connection->tcp_info->retransmits.value_or(0));
      segments += segments_sent(*connection->tcp_info);
    }
    Finding finding = new_finding("loss-bound", group);
    const AdviceScope scope = scope_of(group);
    const std::string program = group.front()->program;
    finding.title = "the path of " + program + "'s connections loses packets: tcptune cannot fix that";
    finding.cause =
        "the network drops packets on this path, and every loss costs a retransmission and a smaller "
        "congestion window; no socket option removes the loss.";
    finding.figures = {
        {"retransmits", retransmits}, {"segments_sent", segments}, {"retransmit_share", retransmits / segments}};
    char text[320];
    (void)std::snprintf(text, sizeof text,
                        "%.0f retransmissions of %.0f data segments sent (%.1f%%) on %llu connection(s)", retransmits,
                        segments, 100 * retransmits / segments, static_cast<unsigned long long>(finding.connections));
    finding.evidence = text;
    finding.tune = "none";
    finding.fix =
        "none in tcptune: find where the path loses packets (interface errors and drops, a congested or "
        "faulty link, mtr toward " +
        (finding.peers.empty() ? std::string("the peer") : finding.peers.front()) + ")";
    finding.gain = "none from a policy";
    finding.gain_arithmetic = "tcptune changes how sockets send, not how often the path drops";
    out.push_back(std::move(finding));
  }
}

}  // namespace tcptune::cli
