#include "systemctl_steps.hpp"

namespace tcptune::cli {

namespace {

// Characters a shell takes literally in a word.
bool plain_for_shell(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
         std::string_view("@%+=:,./_-").find(c) != std::string_view::npos;
}

}  // namespace

std::string unit_name_for_shell(std::string_view name) {
  bool plain = !name.empty();
  for (const char c : name) {
    plain = plain && plain_for_shell(c);
  }
  if (plain) {
    return std::string(name);
  }
  std::string out = "'";
  for (const char c : name) {
    out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  }
  return out + "'";
}

std::string units_for_shell(const ServiceUnitName& unit) {
  // A template's drop-in applies to every instance: the running ones, by a pattern.
  if (unit.is_template) {
    return unit_name_for_shell(unit.name.substr(0, unit.name.find('@') + 1) + "*.service");
  }
  return unit_name_for_shell(unit.name);
}

void print_systemctl_steps(std::FILE* out, const ServiceUnitName& unit, const std::string& root) {
  (void)std::fprintf(out, "%s, then run:\n  systemctl daemon-reload\n  systemctl restart %s\n",
                     root.empty() ? "To apply it" : ("To apply it, on the system under " + root).c_str(),
                     units_for_shell(unit).c_str());
}

}  // namespace tcptune::cli
