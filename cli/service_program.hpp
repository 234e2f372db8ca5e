// The program an ExecStart= command runs, found as systemd finds it (an absolute path, or a name
// looked up in systemd's fixed search path), under `--root`, and whether the dynamic loader will
// preload the shim into it (executable_inspector.hpp).
#pragma once

#include <string>
#include <vector>

#include "exec_command_line.hpp"
#include "service_unit_name.hpp"

namespace tcptune::cli {

struct ServiceProgram {
  std::string program;               // as ExecStart= names it
  bool found = false;                // false: not there (or a specifier this unit leaves open: a template's %i)
  std::string note;                  // why it was not found
  bool bypasses_loader = false;      // static, Go, another C library: no preloading
  std::vector<std::string> reasons;  // in plain words, naming the program as the service sees it
};

ServiceProgram inspect_service_program(const std::string& root, const ServiceUnitName& unit,
                                       const ExecCommand& command);

// The specifiers of a program path that the unit's name settles (%n %N %p %P %i %I %j %J %%);
// false when another one is left (or %i in a template).
bool expand_name_specifiers(const ServiceUnitName& unit, std::string& text);

}  // namespace tcptune::cli
