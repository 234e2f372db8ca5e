#include "tcptune/config/rule_matcher.hpp"

#include <algorithm>

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
  std::size_t p = 0;
  std::size_t t = 0;
  std::size_t star = std::string_view::npos;
  std::size_t star_text = 0;
  // One character class "[...]" at pattern[p]; advances p past it.
  auto class_matches = [&](std::size_t& at, char c) {
    std::size_t i = at + 1;
    const bool negate = i < pattern.size() && (pattern[i] == '!' || pattern[i] == '^');
    if (negate) {
      ++i;
    }
    bool found = false;
    bool first = true;
    for (; i < pattern.size() && (first || pattern[i] != ']'); ++i, first = false) {
      if (i + 2 < pattern.size() && pattern[i + 1] == '-' && pattern[i + 2] != ']') {
        found = found || (c >= pattern[i] && c <= pattern[i + 2]);
        i += 2;
      } else {
        found = found || c == pattern[i];
      }
    }
    at = i < pattern.size() ? i + 1 : i;
    return found != negate;
  };
  while (t < text.size()) {
    if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      star_text = t;
      continue;
    }
    if (p < pattern.size() && pattern[p] == '[') {
      std::size_t next = p;
      if (class_matches(next, text[t])) {
        p = next;
        ++t;
        continue;
      }
    } else if (p < pattern.size() && (pattern[p] == '?' || pattern[p] == text[t])) {
      ++p;
      ++t;
      continue;
    }
    if (star == std::string_view::npos) {
      return false;
    }
    p = star + 1;
    t = ++star_text;
  }
  while (p < pattern.size() && pattern[p] == '*') {
    ++p;
  }
  return p == pattern.size();
}

}  // namespace tcptune::config
