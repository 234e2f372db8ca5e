// Loss-bound paths: retransmissions (TCP_INFO's total_retrans in conn_close) make a share of the
// data segments sent that only a lossy path explains, and the connection sent at about the rate
// that loss allows. tcptune cannot fix a path; the finding says so, so that nobody tunes sockets
// for it.
#include <cmath>
#include <cstdio>
#include <optional>
#include <string>

#include "advise_detectors.hpp"

namespace tcptune::cli {

namespace {

constexpr double kMinRetransmitShare = 0.02;  // 2% of segments: far above a healthy path's
constexpr std::uint64_t kMinRetransmits = 20;
constexpr std::uint64_t kDefaultMss = 1448;
// A connection bound by its loss sends at about MSS/RTT x 1.22/sqrt(p) (Mathis et al., 1997;
// CUBIC falls back to that Reno rate at such loss). One that sent many times faster lost its
// packets in an episode, such as slow start overshooting a drop-tail queue once at the start
// of a short transfer (2.5% of 37,085 segments, at 80 Mbit/s where that rate is 0.56 Mbit/s,
// over the emulated 100 ms link), and is not bound by it.
constexpr double kMathisConstant = 1.22;
constexpr double kMostOverLossRate = 4;

// Data segments sent: TCP_INFO's count, else the bytes acknowledged over the MSS.
double segments_sent(const ObservedTcpInfo& info) {
  if (info.data_segs_out.has_value()) {
    return static_cast<double>(*info.data_segs_out);
  }
  const std::uint64_t mss = info.mss.value_or(kDefaultMss);
  return info.bytes_acked.has_value() && mss != 0 ? static_cast<double>(*info.bytes_acked) / static_cast<double>(mss)
                                                  : 0;
}

struct Rates {
  double sent_bps = 0;        // bytes acknowledged over the time busy sending
  double loss_bound_bps = 0;  // what the loss share allows at the connection's RTT
};

// Both rates, when the record has what they need (busy_us, Linux 4.10).
std::optional<Rates> rates_of(const ObservedTcpInfo& info, double retransmits, double segments) {
  const double rtt_us = info.rtt_us.value_or(info.min_rtt_us.value_or(0));
  if (!info.busy_us.has_value() || *info.busy_us <= 0 || !info.bytes_acked.has_value() || rtt_us <= 0 ||
      segments <= 0 || retransmits <= 0) {
    return std::nullopt;
  }
  const double mss_bits = 8.0 * static_cast<double>(info.mss.value_or(kDefaultMss));
  return Rates{static_cast<double>(*info.bytes_acked) * 8 / (*info.busy_us / 1e6),
               mss_bits / (rtt_us / 1e6) * kMathisConstant / std::sqrt(retransmits / segments)};
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
    if (retransmits < kMinRetransmits || segments <= 0 ||
        static_cast<double>(retransmits) < kMinRetransmitShare * segments) {
      continue;
    }
    const std::optional<Rates> rates = rates_of(*connection.tcp_info, static_cast<double>(retransmits), segments);
    if (rates.has_value() && rates->sent_bps > kMostOverLossRate * rates->loss_bound_bps) {
      continue;  // the loss did not bound it
    }
    lossy.push_back(&connection);
  }
  for (const std::vector<const ObservedConnection*>& group : group_connections(lossy)) {
    double retransmits = 0;
    double segments = 0;
    double sent_bps = 0;
    double loss_bound_bps = 0;
    std::uint64_t with_rates = 0;
    for (const ObservedConnection* connection : group) {
      const double lost = static_cast<double>(connection->tcp_info->retransmits.value_or(0));
      const double sent = segments_sent(*connection->tcp_info);
      retransmits += lost;
      segments += sent;
      if (const std::optional<Rates> rates = rates_of(*connection->tcp_info, lost, sent); rates.has_value()) {
        sent_bps += rates->sent_bps;
        loss_bound_bps += rates->loss_bound_bps;
        ++with_rates;
      }
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
    char text[480];
    (void)std::snprintf(text, sizeof text,
                        "%.0f retransmissions of %.0f data segments sent (%.1f%%) on %llu connection(s)", retransmits,
                        segments, 100 * retransmits / segments, static_cast<unsigned long long>(finding.connections));
    finding.evidence = text;
    if (with_rates != 0) {
      const double count = static_cast<double>(with_rates);
      finding.figures.emplace_back("sent_mbit", sent_bps / count / 1e6);
      finding.figures.emplace_back("loss_bound_mbit", loss_bound_bps / count / 1e6);
      (void)std::snprintf(text, sizeof text,
                          "; sent at %.2f Mbit/s while busy, about what that loss allows (%.2f Mbit/s: MSS/RTT x "
                          "1.22/sqrt(loss), Mathis et al.)",
                          sent_bps / count / 1e6, loss_bound_bps / count / 1e6);
      finding.evidence += text;
    }
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
