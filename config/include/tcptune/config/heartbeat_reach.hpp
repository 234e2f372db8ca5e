// Which parts of a policy can put keep_warm heartbeats on accepted (server-side) sockets. The
// shim cannot know those sockets' protocol, and a byte a client does not expect between
// replies breaks it: a "\n" after an HTTP/1.1 keep-alive response makes curl read
// "HTTP/0.9", a strict RESP client sees a reply start with '\n'. `tcptune check` warns.
#pragma once

#include <vector>

#include "tcptune/config/policy.hpp"

namespace tcptune::config {

// kDefaultsReach (first, when [defaults] has keep_warm: every rule inherits it, so it reaches
// server sockets one way or another), then the index of each rule that sets keep_warm itself
// and can match an accepted socket: its role is not "client" and no earlier rule takes every
// server socket (role "server" or "any" with no peer, port or program). Left out: presets valid
// from the client only (the shim does not send them on accepted sockets), and a rule's preset
// when the rule names ports (the policy says those ports speak that protocol).
inline constexpr int kDefaultsReach = -1;
std::vector<int> heartbeats_reaching_accepted_sockets(const Policy& policy);

}  // namespace tcptune::config
