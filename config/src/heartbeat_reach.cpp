#include "tcptune/config/heartbeat_reach.hpp"

namespace tcptune::config {

namespace {

bool takes_every_server_socket(const Match& match) {
  return match.role != Role::client && match.peers.empty() && match.ports.empty() && match.programs.empty();
}

// The shim refuses a client-only preset on accepted sockets, so such a keep_warm never reaches them.
bool sent_from_servers(const KeepWarm& keep_warm) {
  return keep_warm.side != HeartbeatSide::client;
}

// A preset in a rule that names its servers' ports: the policy says what those ports speak.
bool scoped_to_its_protocol(const Rule& rule) {
  return !rule.tuning.keep_warm->protocol.empty() && !rule.match.ports.empty();
}

}  // namespace

std::vector<int> heartbeats_reaching_accepted_sockets(const Policy& policy) {
  std::vector<int> out;
  if (policy.defaults.keep_warm.has_value() && sent_from_servers(*policy.defaults.keep_warm)) {
    out.push_back(kDefaultsReach);
  }
  for (std::size_t i = 0; i < policy.rules.size(); ++i) {
    const Rule& rule = policy.rules[i];
    if (rule.match.role != Role::client && rule.tuning.keep_warm.has_value() &&
        sent_from_servers(*rule.tuning.keep_warm) && !scoped_to_its_protocol(rule)) {
      out.push_back(static_cast<int>(i));
    }
    if (takes_every_server_socket(rule.match)) {
      break;  // later rules never see a server socket
    }
  }
  return out;
}

}  // namespace tcptune::config
