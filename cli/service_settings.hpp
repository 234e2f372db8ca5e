// A service's [Service] settings that matter to tcptune, as systemd ends up with them after the
// unit file and its drop-ins: lists that an empty assignment resets (Environment=, ExecStart=...),
// single values that a later assignment replaces (Type=, KillMode=...).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "unit_file_syntax.hpp"

namespace tcptune::cli {

// Where a setting was written, for messages: "/etc/systemd/system/x.service:12".
struct SettingOrigin {
  std::string file;
  int line = 0;
  [[nodiscard]] std::string to_string() const { return file + ":" + std::to_string(line); }
};

struct EnvironmentEntry {
  std::string name;
  std::string value;  // unquoted and unescaped; specifiers (%i) left for systemd
  SettingOrigin origin;
};

struct ExecStartLine {
  std::string value;  // as written (continuations joined)
  SettingOrigin origin;
};

struct SingleSetting {
  std::string value;  // empty: unset (or reset to systemd's default)
  SettingOrigin origin;
};

struct ServiceSettings {
  std::vector<EnvironmentEntry> environment;   // one per name, in the order systemd passes them
  std::vector<std::string> environment_files;  // as written, "-" prefix included
  std::vector<std::string> unset_environment;  // names, or NAME=VALUE
  std::vector<ExecStartLine> exec_start;
  SingleSetting type, notify_access, kill_mode, kill_signal, watchdog_sec, user, dynamic_user, root_directory,
      root_image;
  // What systemd would warn about and ignore, for the one line each (file:line: ...).
  std::vector<std::string> ignored;

  // Applies one file's assignments, as systemd does in the order of the files.
  void apply(const std::string& file, const UnitFileText& text);
  [[nodiscard]] const EnvironmentEntry* environment_entry(const std::string& name) const;
  // Type=, with systemd's default ("simple").
  [[nodiscard]] std::string service_type() const;
};

}  // namespace tcptune::cli
