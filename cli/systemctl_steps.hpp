// What to run after `tcptune enable` or `tcptune disable`: systemd reads drop-ins at
// daemon-reload, and a running service gets its new environment at its next start.
#pragma once

#include <cstdio>
#include <string>

#include "service_unit_name.hpp"

namespace tcptune::cli {

void print_systemctl_steps(std::FILE* out, const ServiceUnitName& unit, const std::string& root);

}  // namespace tcptune::cli
