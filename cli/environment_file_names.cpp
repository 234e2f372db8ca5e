#include "environment_file_names.hpp"

namespace tcptune::cli {

namespace {

bool name_character(char c, bool first) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (!first && c >= '0' && c <= '9');
}

}  // namespace

std::vector<std::string> environment_file_names(std::string_view text) {
  std::vector<std::string> names;
  std::size_t at = 0;
  while (at < text.size()) {
    while (at < text.size() && (text[at] == ' ' || text[at] == '\t' || text[at] == '\n' || text[at] == '\r')) {
      ++at;
    }
    if (at >= text.size()) {
      break;
    }
    if (text[at] == '#' || text[at] == ';') {
      at = text.find('\n', at);
      at = at == std::string_view::npos ? text.size() : at + 1;
      continue;
    }
    if (text.substr(at, 7) == "export ") {
      at += 7;
    }
    const std::size_t begin = at;
    while (at < text.size() && name_character(text[at], at == begin)) {
      ++at;
    }
    std::size_t after = at;
    while (after < text.size() && (text[after] == ' ' || text[after] == '\t')) {
      ++after;
    }
    if (at > begin && after < text.size() && text[after] == '=') {
      names.emplace_back(text.substr(begin, at - begin));
    }
    // The value: to the end of the line, or further inside quotes or after a backslash.
    char quote = 0;
    for (at = after; at < text.size(); ++at) {
      const char c = text[at];
      if (c == '\\' && quote != '\'') {
        ++at;  // whatever follows, a newline included, is part of the value
      } else if (quote != 0) {
        if (c == quote) {
          quote = 0;
        }
      } else if (c == '\'' || c == '"') {
        quote = c;
      } else if (c == '\n') {
        break;
      }
    }
  }
  return names;
}

}  // namespace tcptune::cli
