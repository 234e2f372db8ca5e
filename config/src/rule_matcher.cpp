#include "tcptune/config/rule_matcher.hpp"

#include <fnmatch.h>

#include <algorithm>
#include <string>

namespace tcptune::config {

namespace {

bool port_matches(const std::vector<PortRange>& ports, std::uint16_t port) {
  return ports.empty() ||
         std::any_of(ports.begin(), ports.end(), [&](const PortRange& r) { return port >= r.first && port <= r.last; });
}

bool rule_matches(const Match& match, const ConnectionFacts& facts, bool is_listener) {
  if (match.role != Role::any && match.role != facts.role) {
    return false;
  }
  // Clients match on the peer's port, servers (listener and accepted) on their local port.
  const std::uint16_t port = facts.role == Role::client ? facts.peer.port : facts.local_port;
  if (!port_matches(match.ports, port)) {
    return false;
  }
  if (!match.peers.empty() && !is_listener &&
      std::none_of(match.peers.begin(), match.peers.end(),
                   [&](const Cidr& cidr) { return cidr_contains(cidr, facts.peer); })) {
    return false;
  }
  return match.programs.empty() || std::any_of(match.programs.begin(), match.programs.end(),
                                               [&](const std::string& p) { return glob_match(p, facts.program); });
}

}  // namespace

int match_rule(const Policy& policy, const ConnectionFacts& facts, bool is_listener) {
  for (std::size_t i = 0; i < policy.rules.size(); ++i) {
    if (rule_matches(policy.rules[i].match, facts, is_listener)) {
      return static_cast<int>(i);
    }
  }
  return -1;
}

const Tuning& tuning_for(const Policy& policy, int rule_index) {
  if (rule_index >= 0 && static_cast<std::size_t>(rule_index) < policy.rules.size()) {
    return policy.rules[static_cast<std::size_t>(rule_index)].effective;
  }
  return policy.defaults;
}

std::string_view rule_name(const Policy& policy, int rule_index) {
  if (rule_index >= 0 && static_cast<std::size_t>(rule_index) < policy.rules.size()) {
    return policy.rules[static_cast<std::size_t>(rule_index)].name;
  }
  return "(defaults)";
}

bool glob_match(std::string_view pattern, std::string_view text) {
  // fnmatch takes C strings: a pattern with a NUL names no program.
  if (pattern.find('\0') != std::string_view::npos || text.find('\0') != std::string_view::npos) {
    return false;
  }
  // No FNM_PATHNAME or FNM_PERIOD: the text is a program's name, and '*' matches any byte of it.
  return ::fnmatch(std::string(pattern).c_str(), std::string(text).c_str(), 0) == 0;
}

}  // namespace tcptune::config
