// The drop-in `tcptune enable` writes for a service, decided from the service's settings as they
// are without it. Either LD_PRELOAD with the shim first and the unit's own preloads after it (a
// drop-in's Environment= replaces the unit's value, so it carries both), or, for a program the
// dynamic loader will not preload into (static, Go, musl), ExecStart= wrapped in `tcptune run`,
// which tunes it from outside. Both are snapshots of the unit as it is now.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "exec_command_line.hpp"
#include "service_program.hpp"
#include "service_settings.hpp"
#include "service_unit_name.hpp"

namespace tcptune::cli {

// Sorted after the administrator's drop-ins (systemctl edit's override.conf...), so that its
// settings are the ones that hold.
inline constexpr const char* kDropinFileName = "zz-tcptune.conf";
// The first line of every drop-in tcptune writes: `tcptune disable` removes only such a file.
inline constexpr std::string_view kDropinMarker = "# Written by tcptune enable";
inline constexpr std::string_view kMadeDirectoryMarker = "# tcptune enable made this directory";

struct DropinRequest {
  ServiceUnitName unit;                    // the service the drop-in is for
  ServiceSettings settings;                // the unit and its drop-ins, without tcptune's own
  std::vector<ExecCommand> commands;       // ExecStart='s commands, in order
  std::vector<ServiceProgram> programs;    // the program of each command
  std::vector<std::string> preload_files;  // EnvironmentFile= files that set LD_PRELOAD
  bool supervise = false;                  // --supervise: wrap, and supervise whatever the program
  std::string shim;                        // libtcptune.so as the service will load it
  std::string tcptune;                     // this tcptune, for a wrapped ExecStart=
  std::string policy;                      // TCPTUNE_POLICY to write; empty: none
  bool made_directory = false;             // UNIT.d did not exist before tcptune enable
};

struct DropinPlan {
  std::string refusal;  // set: nothing is written, and this says why
  std::string text;
  bool wraps = false;                 // ExecStart= wrapped in tcptune run
  std::vector<std::string> notes;     // what the drop-in does, one line each
  std::vector<std::string> warnings;  // what may keep it from working
};

DropinPlan plan_dropin(const DropinRequest& request);

bool is_tcptune_dropin(std::string_view text);
bool dropin_made_directory(std::string_view text);

// What an earlier `tcptune enable` was told, read back from its drop-in, so that running it again
// (the refresh the drop-in asks for) keeps them: --policy's file and --supervise.
struct DropinChoices {
  std::string policy;  // TCPTUNE_POLICY it wrote; empty: none
  bool supervise = false;
};
DropinChoices dropin_choices(std::string_view text);

}  // namespace tcptune::cli
