#include "command_reference.hpp"

#include <CLI/CLI.hpp>

namespace tcptune::cli {

namespace {

// CLI11's type name carries an IsMember check's set: "TEXT:{rule,peer,program,callsite}".
std::vector<std::string> choices_of(const std::string& type_name) {
  std::vector<std::string> choices;
  const std::size_t open = type_name.find('{');
  const std::size_t close = type_name.rfind('}');
  if (open == std::string::npos || close == std::string::npos || close < open) {
    return choices;
  }
  std::size_t start = open + 1;
  while (start < close) {
    std::size_t end = type_name.find(',', start);
    if (end == std::string::npos || end > close) {
      end = close;
    }
    choices.push_back(type_name.substr(start, end - start));
    start = end + 1;
  }
  return choices;
}

// The value's name as the help shows it: the option text ("FILE"), else the type name before
// its checks ("NAME" of "NAME:{...}").
std::string value_name_of(const CLI::Option& option) {
  if (!option.get_option_text().empty()) {
    return option.get_option_text();
  }
  const std::string type = option.get_type_name();
  return type.substr(0, type.find(':'));
}

OptionReference describe_option(const CLI::Option& option) {
  OptionReference out;
  out.description = option.get_description();
  if (!option.nonpositional()) {
    const std::string name = option.get_name(true);
    out.names.push_back(name);
    out.value_name = name;
    out.repeats = option.get_items_expected_max() > 1;
    out.kind = name == "CMD"                     ? ValueKind::program
               : name == "FILE" || name == "LOG" ? ValueKind::file
               : name == "DIR"                   ? ValueKind::directory
               : name == "UNIT"                  ? ValueKind::service
                                                 : ValueKind::none;
    return out;
  }
  for (const std::string& name : option.get_snames()) {
    out.names.push_back("-" + name);
  }
  for (const std::string& name : option.get_lnames()) {
    out.names.push_back("--" + name);
  }
  if (option.get_type_size_max() == 0) {
    return out;  // a flag
  }
  out.value_name = value_name_of(option);
  out.choices = choices_of(option.get_type_name());
  if (out.names.back() == "--preset") {
    out.kind = ValueKind::preset;
    out.choices.clear();  // the installed ones, found when completing
  } else if (!out.choices.empty()) {
    out.kind = ValueKind::choices;
  } else if (out.value_name == "FILE") {
    out.kind = ValueKind::file;
  } else if (out.value_name == "DIR") {
    out.kind = ValueKind::directory;
  }
  return out;
}

CommandReference describe_command(const CLI::App& command) {
  CommandReference out;
  out.name = command.get_name();
  out.description = command.get_description();
  for (const CLI::Option* option : command.get_options()) {
    OptionReference described = describe_option(*option);
    if (option->nonpositional()) {
      out.options.push_back(std::move(described));
    } else {
      out.runs_a_program = out.runs_a_program || described.kind == ValueKind::program;
      out.positionals.push_back(std::move(described));
    }
  }
  return out;
}

}  // namespace

CommandLineReference describe_command_line(const CLI::App& app) {
  CommandLineReference out;
  out.top = describe_command(app);
  out.top.name.clear();
  for (const CLI::App* command : app.get_subcommands([](const CLI::App*) { return true; })) {
    out.commands.push_back(describe_command(*command));
  }
  return out;
}

}  // namespace tcptune::cli
