#include "tcptune/config/arm_label.hpp"

#include "tcptune/config/escape.hpp"

namespace tcptune::config {

namespace {

bool alphanumeric(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

}  // namespace

std::string arm_name_problem(std::string_view name) {
  // A value of any length may come from the environment: the line shows its start.
  constexpr std::size_t kShown = 48;
  const std::string start = escape_for_display(name.substr(0, kShown), false) + (name.size() > kShown ? "..." : "");
  const std::string shown = "'" + start + "' is not an arm name: ";
  if (name.empty()) {
    return shown + "it is empty";
  }
  if (name.size() > kLongestArm) {
    return shown + "longer than " + std::to_string(kLongestArm) + " characters";
  }
  if (!alphanumeric(name.front())) {
    return shown + "it must start with a letter or a digit";
  }
  for (const char c : name) {
    if (!alphanumeric(c) && c != '_' && c != '-' && c != '.') {
      return shown + "only letters, digits, '_', '-' and '.' may follow";
    }
  }
  return {};
}

ArmFromEnvironment arm_from_environment(const char* value) {
  ArmFromEnvironment read;
  if (value == nullptr || *value == '\0') {
    return read;
  }
  if (std::string problem = arm_name_problem(value); !problem.empty()) {
    read.problem = std::string(kArmEnv) + "=" + problem + "; ignored, no arm label";
    return read;
  }
  read.arm = value;
  return read;
}

}  // namespace tcptune::config
