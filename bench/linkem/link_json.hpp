// The one-line JSON that `up`, `status` and `set` print (and the self-test parses).
#pragma once

#include <sys/types.h>
#include <string>
#include <string_view>

#include "counters.hpp"
#include "link_config.hpp"

namespace tcptune::linkem {

struct LinkDescription {
  std::string_view backend;  // "tun" (or "netem")
  const LinkConfig* config = nullptr;
  NetnsSysctls sysctls;  // as read back from the namespaces
  pid_t daemon_pid = 0;
  const DirectionCounters* a_to_b = nullptr;  // counters are included when both are set
  const DirectionCounters* b_to_a = nullptr;
};

std::string format_link_json(const LinkDescription& link);

// The counters alone, for the daemon's log: {"packets_in":..,"packets":..,...}.
std::string format_counters_json(const DirectionCounters& counters);

// Escapes a string for a JSON string literal (error messages may contain quotes).
std::string json_string(std::string_view text);

}  // namespace tcptune::linkem
