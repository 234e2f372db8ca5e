// The command line as data: each subcommand, its options and positionals, and what kind of value
// each takes, read from the CLI11 definition (define_command_line). The shell completion is
// generated from it and the manual's drift test checks tcptune(1) against it, so neither can
// name an option the command does not have or miss one it has.
#pragma once

#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace tcptune::cli {

// What a value is, for completion: a file, a directory, a program to run, a preset's name, a
// systemd service, one of fixed choices, or free text.
enum class ValueKind { none, file, directory, program, preset, service, choices };

struct OptionReference {
  std::vector<std::string> names;  // "-q", "--quiet"; a positional's one name ("CMD")
  std::string value_name;          // "FILE"; empty for a flag
  ValueKind kind = ValueKind::none;
  std::vector<std::string> choices;  // for ValueKind::choices
  bool repeats = false;              // a positional taking one value or more (LOG...)
  std::string description;
};

struct CommandReference {
  std::string name;  // empty for tcptune itself
  std::string description;
  std::vector<OptionReference> options;
  std::vector<OptionReference> positionals;
  // The program and its arguments follow the options (run, ab): after `--` or the first positional.
  bool runs_a_program = false;
};

struct CommandLineReference {
  CommandReference top;                    // tcptune's own options (--help, --version)
  std::vector<CommandReference> commands;  // in the order of the help
};

CommandLineReference describe_command_line(const CLI::App& app);

}  // namespace tcptune::cli
