// The socket options a policy's `sockopt = [{ level, name, value }]` may name, and their levels.
#pragma once

#include <string_view>

#include "tcptune/config/units.hpp"

namespace tcptune::config {

struct NamedLevel {
  std::string_view name;  // "IPPROTO_TCP"
  int level;
};

struct NamedOption {
  std::string_view name;  // "TCP_MAXSEG"
  int level;
  int option;
};

// "IPPROTO_TCP" -> its level; the error lists the four known levels.
Parsed<NamedLevel> find_sockopt_level(std::string_view name);
// "TCP_MAXSEG" -> its level and number; the error suggests a close name.
Parsed<NamedOption> find_socket_option(std::string_view name);
// Empty when `option` belongs to `level`, else why not ("TCP_MAXSEG belongs to level IPPROTO_TCP, not
// SOL_SOCKET").
std::string sockopt_level_mismatch(const NamedOption& option, const NamedLevel& level);

}  // namespace tcptune::config
