#include "service_settings.hpp"

#include <algorithm>

#include "unit_words.hpp"

namespace tcptune::cli {

namespace {

// systemd's env_name_is_valid: a shell-style name (what systemd itself refuses is ignored).
bool valid_environment_name(const std::string& name) {
  if (name.empty() || (name[0] >= '0' && name[0] <= '9')) {
    return false;
  }
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
  });
}

void apply_environment(ServiceSettings& settings, const UnitAssignment& assignment, const SettingOrigin& origin) {
  if (assignment.value.empty()) {
    settings.environment.clear();
    return;
  }
  // Words before a syntax error are kept: systemd adds them one by one.
  const UnitWords split = split_unit_words(assignment.value, false);
  for (const UnitWord& word : split.words) {
    const std::size_t equals = word.text.find('=');
    const std::string name = word.text.substr(0, equals);
    if (equals == std::string::npos || !valid_environment_name(name)) {
      settings.ignored.push_back(origin.to_string() + ": Environment= '" + word.text +
                                 "' is not NAME=VALUE: systemd ignores it");
      continue;
    }
    EnvironmentEntry entry{name, word.text.substr(equals + 1), origin};
    auto existing = std::find_if(settings.environment.begin(), settings.environment.end(),
                                 [&](const EnvironmentEntry& e) { return e.name == name; });
    if (existing != settings.environment.end()) {
      *existing = std::move(entry);  // replaced where it was, as strv_env_replace does
    } else {
      settings.environment.push_back(std::move(entry));
    }
  }
  if (!split.error.empty()) {
    settings.ignored.push_back(origin.to_string() + ": Environment= " + split.error +
                               ": systemd ignores the rest of the line");
  }
}

void apply_words(std::vector<std::string>& list, const std::string& value) {
  if (value.empty()) {
    list.clear();
    return;
  }
  for (UnitWord& word : split_unit_words(value, false).words) {
    list.push_back(std::move(word.text));
  }
}

}  // namespace

void ServiceSettings::apply(const std::string& file, const UnitFileText& text) {
  for (const UnitAssignment& assignment : text.assignments) {
    if (assignment.section != "Service") {
      continue;
    }
    const SettingOrigin origin{file, assignment.line};
    const std::string& key = assignment.key;
    const std::string& value = assignment.value;
    if (key == "Environment") {
      apply_environment(*this, assignment, origin);
    } else if (key == "EnvironmentFile") {
      if (value.empty()) {
        environment_files.clear();
      } else {
        environment_files.push_back(value);
      }
    } else if (key == "UnsetEnvironment") {
      apply_words(unset_environment, value);
    } else if (key == "ExecStart") {
      if (value.empty()) {
        exec_start.clear();
      } else {
        exec_start.push_back({value, origin});
      }
    } else {
      struct Single {
        const char* key;
        SingleSetting ServiceSettings::*setting;
      };
      static constexpr Single kSingles[] = {
          {"Type", &ServiceSettings::type},
          {"NotifyAccess", &ServiceSettings::notify_access},
          {"KillMode", &ServiceSettings::kill_mode},
          {"KillSignal", &ServiceSettings::kill_signal},
          {"WatchdogSec", &ServiceSettings::watchdog_sec},
          {"User", &ServiceSettings::user},
          {"DynamicUser", &ServiceSettings::dynamic_user},
          {"RootDirectory", &ServiceSettings::root_directory},
          {"RootImage", &ServiceSettings::root_image},
      };
      for (const Single& single : kSingles) {
        if (key == single.key) {
          this->*single.setting = {value, origin};
        }
      }
    }
  }
}

const EnvironmentEntry* ServiceSettings::environment_entry(const std::string& name) const {
  auto found = std::find_if(environment.begin(), environment.end(),
                            [&](const EnvironmentEntry& entry) { return entry.name == name; });
  return found != environment.end() ? &*found : nullptr;
}

std::string ServiceSettings::service_type() const {
  return type.value.empty() ? "simple" : type.value;
}

}  // namespace tcptune::cli
