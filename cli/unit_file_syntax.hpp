// systemd's unit file syntax (systemd.syntax(7)), as systemd 252 reads it: [Section] headers,
// Key=Value assignments, comment lines starting with '#' or ';', a line ending in a backslash
// continued on the next (the backslash becomes a space, comment lines in between are skipped).
// Values are kept as written: what quotes and escapes mean is each key's (unit_words.hpp).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace tcptune::cli {

struct UnitAssignment {
  std::string section;  // "Service"
  std::string key;      // "Environment"
  std::string value;    // as written, whitespace around it removed; empty: the key's reset
  int line = 0;         // where the assignment starts (1-based)
};

struct UnitFileText {
  std::vector<UnitAssignment> assignments;  // in file order; those outside any section left out
  // Set when systemd would refuse the whole file (a bad section header, a line without '='):
  // "line 3: ...".
  std::string error;
};

UnitFileText parse_unit_file(std::string_view text);

}  // namespace tcptune::cli
