// What to run after `tcptune enable` or `tcptune disable`: systemd reads drop-ins at
// daemon-reload, and a running service gets its new environment at its next start.
#pragma once

#include <cstdio>
#include <string>
#include <string_view>

#include "service_unit_name.hpp"

namespace tcptune::cli {

// A unit name as one shell word: single-quoted when it has a character the shell would take
// (systemd-escape's '\', as in a-b\x2dc.service), as it is otherwise.
std::string unit_name_for_shell(std::string_view name);

// The units a command acts on, as one shell word: a template stands for its running instances
// ('getty@*.service', for systemctl restart and journalctl -u), any other unit for itself.
std::string units_for_shell(const ServiceUnitName& unit);

void print_systemctl_steps(std::FILE* out, const ServiceUnitName& unit, const std::string& root);

}  // namespace tcptune::cli
