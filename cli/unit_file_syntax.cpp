#include "unit_file_syntax.hpp"

namespace tcptune::cli {

namespace {

constexpr std::string_view kWhitespace = " \t\n\r";

std::string_view strip(std::string_view text) {
  const std::size_t first = text.find_first_not_of(kWhitespace);
  if (first == std::string_view::npos) {
    return {};
  }
  return text.substr(first, text.find_last_not_of(kWhitespace) - first + 1);
}

bool is_comment(std::string_view stripped) {
  return !stripped.empty() && (stripped.front() == '#' || stripped.front() == ';');
}

// Whether the line ends in a backslash that is not itself escaped ("a\\" does not continue).
bool ends_in_continuation(std::string_view line) {
  bool escaped = false;
  for (const char c : line) {
    escaped = !escaped && c == '\\';
  }
  return escaped;
}

// One logical line (continuations joined): a section header, an assignment, or nothing.
// False when systemd would refuse the file.
bool parse_line(std::string_view raw, int number, std::string& section, UnitFileText& out) {
  const std::string_view line = strip(raw);
  if (line.empty() || is_comment(line)) {
    return true;
  }
  if (line.front() == '[') {
    if (line.size() < 2 || line.back() != ']') {
      out.error = "line " + std::to_string(number) + ": invalid section header '" + std::string(line) + "'";
      return false;
    }
    section = std::string(line.substr(1, line.size() - 2));
    return true;
  }
  const std::size_t equals = line.find('=');
  if (equals == std::string_view::npos) {
    out.error = "line " + std::to_string(number) + ": missing '=' in '" + std::string(line) + "'";
    return false;
  }
  if (section.empty()) {
    return true;  // outside any section: systemd ignores it
  }
  out.assignments.push_back(
      {section, std::string(strip(line.substr(0, equals))), std::string(strip(line.substr(equals + 1))), number});
  return true;
}

}  // namespace

UnitFileText parse_unit_file(std::string_view text) {
  UnitFileText out;
  if (text.starts_with("\xEF\xBB\xBF")) {
    text.remove_prefix(3);  // a UTF-8 byte order mark, which systemd skips
  }
  std::string section;
  std::string continued;  // the logical line so far, while lines end in a backslash
  int continued_from = 0;
  int number = 0;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string_view::npos) {
      end = text.size();
    }
    std::string_view line = text.substr(start, end - start);
    start = end + 1;
    ++number;
    while (!line.empty() && line.back() == '\r') {
      line.remove_suffix(1);
    }
    const bool in_continuation = continued_from != 0;
    if (in_continuation && is_comment(strip(line))) {
      continue;  // a comment between continued lines is skipped, not the end of the line
    }
    std::string joined = in_continuation ? continued + std::string(line) : std::string(line);
    if (!in_continuation) {
      continued_from = number;
    }
    if (ends_in_continuation(joined)) {
      joined.back() = ' ';
      continued = std::move(joined);
      continue;
    }
    if (!parse_line(joined, continued_from, section, out)) {
      return out;
    }
    continued.clear();
    continued_from = 0;
  }
  if (continued_from != 0) {
    (void)parse_line(continued, continued_from, section, out);  // a file ending in a backslash
  }
  return out;
}

}  // namespace tcptune::cli
