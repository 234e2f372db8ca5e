// tcptune_cli_reference: what tcptune's command line and policy define, for the build and the tests.
//   json  every subcommand with its options and positionals, and every policy key and keep_warm
//         protocol preset, as one JSON object (the manual's drift test reads it)
//   bash  the bash completion script
//   zsh   the zsh completion script
// Written to stdout, or to the file named after the mode.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <exception>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "command_line.hpp"
#include "command_reference.hpp"
#include "shell_completion.hpp"
#include "tcptune/config/keep_warm_presets.hpp"
#include "tcptune/config/policy_keys.hpp"
#include "tcptune/config/tuning_keys.hpp"

namespace {

using nlohmann::json;
using tcptune::cli::CommandReference;
using tcptune::cli::OptionReference;

json options_json(const std::vector<OptionReference>& options) {
  json out = json::array();
  for (const OptionReference& option : options) {
    out.push_back({{"names", option.names},
                   {"value", option.value_name},
                   {"choices", option.choices},
                   {"description", option.description}});
  }
  return out;
}

json command_json(const CommandReference& command) {
  return {{"name", command.name},
          {"description", command.description},
          {"options", options_json(command.options)},
          {"positionals", options_json(command.positionals)}};
}

json names_json(std::span<const std::string_view> names) {
  json out = json::array();
  for (const std::string_view name : names) {
    out.push_back(std::string(name));
  }
  return out;
}

json policy_json() {
  json tuning = json::array();
  for (const tcptune::config::TuningKey& key : tcptune::config::tuning_keys()) {
    tuning.push_back(std::string(key.name));
  }
  json presets = json::array();
  for (const tcptune::config::KeepWarmPreset& preset : tcptune::config::keep_warm_presets()) {
    presets.push_back(std::string(preset.name));
  }
  return {{"top_level", names_json(tcptune::config::top_level_keys())},
          {"rule", names_json(tcptune::config::rule_own_keys())},
          {"match", names_json(tcptune::config::match_keys())},
          {"tuning", tuning},
          {"log", names_json(tcptune::config::log_keys())},
          {"keep_warm_protocols", presets}};
}

// The text for `mode`, or nothing for a mode it does not know.
std::optional<std::string> reference_text(std::string_view mode) {
  tcptune::cli::CommandLine line;
  CLI::App app;
  tcptune::cli::define_command_line(app, line);
  const tcptune::cli::CommandLineReference reference = tcptune::cli::describe_command_line(app);
  if (mode == "json") {
    json commands = json::array();
    for (const CommandReference& command : reference.commands) {
      commands.push_back(command_json(command));
    }
    return json{{"top", command_json(reference.top)}, {"commands", commands}, {"policy", policy_json()}}.dump(2) + "\n";
  }
  if (mode == "bash") {
    return tcptune::cli::bash_completion(reference);
  }
  if (mode == "zsh") {
    return tcptune::cli::zsh_completion(reference);
  }
  return std::nullopt;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const std::optional<std::string> out = reference_text(argc == 2 || argc == 3 ? argv[1] : "");
    if (!out.has_value()) {
      (void)std::fputs("usage: tcptune_cli_reference json|bash|zsh [OUTPUT]\n", stderr);
      return 2;
    }
    if (argc == 3) {
      std::ofstream file(argv[2], std::ios::binary | std::ios::trunc);
      file << *out;
      file.close();
      if (!file) {
        (void)std::fprintf(stderr, "tcptune_cli_reference: cannot write %s\n", argv[2]);
        return 1;
      }
      return 0;
    }
    return std::fputs(out->c_str(), stdout) < 0 ? 1 : 0;
  } catch (const std::exception& error) {
    (void)std::fprintf(stderr, "tcptune_cli_reference: %s\n", error.what());
    return 1;
  }
}
