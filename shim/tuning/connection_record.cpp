#include "connection_record.hpp"

#include "socket_probe.hpp"
#include "tcptune/config/rule_matcher.hpp"

namespace tcptune::shim {

telemetry::Record connection_record(const char* event, int fd, int app_fd, SocketRole role,
                                    const config::Policy& policy, int rule, ApplyPhase phase) {
  telemetry::Record record(event);
  record.add("fd", app_fd)
      .add("role", role_name(role))
      .add("rule", config::rule_name(policy, rule))
      .add("phase", phase_name(phase));
  if (const config::Endpoint local = local_endpoint(fd); local.family != 0) {
    record.add("local", config::format_endpoint(local));
  }
  if (const config::Endpoint peer = peer_endpoint(fd); peer.family != 0) {
    record.add("peer", config::format_endpoint(peer));
  }
  return record;
}

void add_options(telemetry::Record& record, const ApplyReport& report) {
  record.add_json_section("options", report.to_json(), report.to_string());
}

}  // namespace tcptune::shim
