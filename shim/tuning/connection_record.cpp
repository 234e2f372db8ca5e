#include "connection_record.hpp"

#include <cstdio>

#include "json_writer.hpp"
#include "socket_probe.hpp"
#include "tcptune/config/rule_matcher.hpp"

namespace tcptune::shim {

telemetry::Record connection_record(const char* event, int fd, int app_fd, SocketRole role,
                                    const config::Policy& policy, int rule, ApplyPhase phase) {
  return connection_record(event, app_fd, role, policy, rule, phase, local_endpoint(fd), peer_endpoint(fd));
}

telemetry::Record connection_record(const char* event, int app_fd, SocketRole role, const config::Policy& policy,
                                    int rule, ApplyPhase phase, const config::Endpoint& local,
                                    const config::Endpoint& peer) {
  telemetry::Record record(event);
  record.add("fd", app_fd)
      .add("role", role_name(role))
      .add("rule", config::rule_name(policy, rule))
      .add("phase", phase_name(phase));
  if (local.family != 0) {
    record.add("local", config::format_endpoint(local));
  }
  if (peer.family != 0) {
    record.add("peer", config::format_endpoint(peer));
  }
  return record;
}

void add_tcp_info(telemetry::Record& record, const TcpInfoSummary& info) {
  const auto json = [&info] {
    telemetry::JsonObject object;
    object.field("rtt_us", info.rtt_us)
        .field("rttvar_us", info.rttvar_us)
        .field("cwnd", info.snd_cwnd)
        .field("mss", info.snd_mss)
        .field("retransmits", info.total_retrans);
    if (info.delivery_rate_Bps) {
      object.field("delivery_rate_bps", *info.delivery_rate_Bps * 8);
    }
    if (info.bytes_acked) {
      object.field("bytes_acked", *info.bytes_acked);
    }
    if (info.min_rtt_us) {
      object.field("min_rtt_us", *info.min_rtt_us);
    }
    if (info.data_segs_out) {
      object.field("data_segs_out", *info.data_segs_out);
    }
    if (info.busy_us) {
      object.field("busy_us", *info.busy_us)
          .field("rwnd_limited_us", *info.rwnd_limited_us)
          .field("sndbuf_limited_us", *info.sndbuf_limited_us);
    }
    return object.str();
  };
  const auto text = [&info] {
    char line[160];
    (void)std::snprintf(line, sizeof line, "rtt_us=%u,cwnd=%u,retransmits=%u", info.rtt_us, info.snd_cwnd,
                        info.total_retrans);
    return std::string(line);
  };
  record.add_json("tcp_info", json, text);
}

void add_options(telemetry::Record& record, const ApplyReport& report) {
  record.add_json_section(
      "options", [&report] { return report.to_json(); }, [&report] { return report.to_string(); });
}

}  // namespace tcptune::shim
