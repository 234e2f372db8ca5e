#include "exec_command_line.hpp"

#include "unit_words.hpp"

namespace tcptune::cli {

namespace {

constexpr std::string_view kPrefixCharacters = "-@:+!";

std::string_view strip(std::string_view text) {
  const std::size_t first = text.find_first_not_of(" \t\n\r");
  if (first == std::string_view::npos) {
    return {};
  }
  return text.substr(first, text.find_last_not_of(" \t\n\r") - first + 1);
}

}  // namespace

ExecCommands parse_exec_value(std::string_view value) {
  ExecCommands result;
  // ExecStart= keeps an unknown escape as written ("\;" is a literal semicolon).
  const UnitWords split = split_unit_words(value, true);
  if (!split.error.empty()) {
    result.error = split.error;
    return result;
  }
  const std::vector<UnitWord>& words = split.words;
  std::size_t first = 0;
  while (first < words.size()) {
    std::size_t last = first;  // one past the command's last word
    while (last < words.size() && words[last].text != ";") {
      ++last;
    }
    if (last > first) {
      ExecCommand command;
      std::string_view program = words[first].text;
      while (!program.empty() && kPrefixCharacters.find(program.front()) != std::string_view::npos) {
        command.prefixes += program.front();
        program.remove_prefix(1);
      }
      command.program = std::string(program);
      if (last > first + 1) {
        command.arguments = std::string(strip(value.substr(words[first].end, words[last - 1].end - words[first].end)));
      }
      result.commands.push_back(std::move(command));
    }
    first = last + 1;
  }
  if (result.commands.empty()) {
    result.error = "no command";
  }
  return result;
}

}  // namespace tcptune::cli
