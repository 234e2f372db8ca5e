// Where systemd finds a service's unit file and its drop-ins, on this system or under a root
// (`--root DIR`): the system search path (`systemd-analyze unit-paths`), the unit file (or its
// template's), and every drop-in that applies, in the order systemd applies them.
#pragma once

#include <string>
#include <vector>

#include "service_unit_name.hpp"

namespace tcptune::cli {

// systemd's system unit search path, highest priority first (as `systemd-analyze unit-paths`
// lists it, with /lib/systemd/system for systems whose /lib is not /usr/lib).
const std::vector<std::string>& system_unit_paths();

// Where `tcptune enable` writes: /etc/systemd/system, where the administrator's drop-ins go.
inline constexpr const char* kAdminUnitPath = "/etc/systemd/system";

struct UnitFiles {
  std::string unit_file;  // the file read for the unit (a path of this system); empty: none
  bool masked = false;    // linked to /dev/null
  std::string real_name;  // the unit's name when the one given is an alias (a link to another name)
  // Drop-ins in the order systemd applies them (by file name; of two with the same name, the one
  // earlier in the search path), each a path of this system. A masked one (/dev/null) is left out.
  std::vector<std::string> dropins;
};

// The files of `unit` under `root` ("" or "/": this system). `unit`'s own name is looked for
// first, then its template's.
UnitFiles find_unit_files(const std::string& root, const ServiceUnitName& unit);

}  // namespace tcptune::cli
