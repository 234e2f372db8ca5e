// First-match-wins rule selection.
#pragma once

#include <string_view>

#include "tcptune/config/cidr.hpp"
#include "tcptune/config/policy.hpp"

namespace tcptune::config {

// What is known about a socket when its rule is chosen.
struct ConnectionFacts {
  Role role = Role::any;  // client (connect), server (listener or accepted); any when unknown
  Endpoint peer;          // family 0 for a listener: rules with `peer` do not match it
  std::uint16_t local_port = 0;
  std::string_view program;
};

// Index into policy.rules of the first rule that matches, or -1 (then [defaults] applies).
// For a listener (role server, no peer) a rule matches when its role and port fit; its
// peer list is ignored, since the listener serves every peer.
int match_rule(const Policy& policy, const ConnectionFacts& facts, bool is_listener = false);

// The tuning to apply: the matched rule's effective tuning or the defaults.
const Tuning& tuning_for(const Policy& policy, int rule_index);
std::string_view rule_name(const Policy& policy, int rule_index);  // "(defaults)" for -1

// fnmatch(3) without flags: '*', '?', '[a-z]', '[!x]' (and '[^x]'), '[[:digit:]]', '\*' for a literal '*'.
bool glob_match(std::string_view pattern, std::string_view text);

}  // namespace tcptune::config
