#include "service_unit_name.hpp"

#include <array>

namespace tcptune::cli {

namespace {

constexpr std::size_t kMaxUnitName = 255;  // systemd's UNIT_NAME_MAX
constexpr std::string_view kServiceSuffix = ".service";

// Every unit type systemd has: a name ending in another one is not a service.
constexpr std::array<std::string_view, 11> kUnitTypes{"service", "socket", "target", "device", "mount", "automount",
                                                      "swap",    "timer",  "path",   "slice",  "scope"};

bool valid_character(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == ':' || c == '-' ||
         c == '_' || c == '.' || c == '\\';
}

// The type a name ends in ("socket"), or empty when it ends in none.
std::string_view unit_type_of(std::string_view name) {
  const std::size_t dot = name.rfind('.');
  if (dot == std::string_view::npos) {
    return {};
  }
  const std::string_view suffix = name.substr(dot + 1);
  for (const std::string_view type : kUnitTypes) {
    if (suffix == type) {
      return type;
    }
  }
  return {};
}

// Why a service's name is not valid, or empty.
std::string name_problem(std::string_view name) {
  if (name.size() > kMaxUnitName) {
    return "longer than 255 characters";
  }
  const std::string_view stem = name.substr(0, name.size() - kServiceSuffix.size());
  const std::size_t at = stem.find('@');
  if (stem.empty() || at == 0) {
    return "no name before '.service' or '@'";
  }
  if (at != std::string_view::npos && stem.find('@', at + 1) != std::string_view::npos) {
    return "more than one '@'";
  }
  for (std::size_t i = 0; i < stem.size(); ++i) {
    if (i != at && !valid_character(stem[i])) {
      return std::string("'") + stem[i] + "' is not allowed in a unit name (systemd-escape NAME escapes it)";
    }
  }
  return {};
}

}  // namespace

std::string ServiceUnitName::template_name() const {
  return is_instance ? template_of(name) : name;
}

bool is_instance_name(std::string_view name) {
  const std::size_t at = name.find('@');
  const std::size_t dot = name.rfind('.');
  return at != std::string_view::npos && dot != std::string_view::npos && dot > at + 1;
}

std::string template_of(std::string_view name) {
  const std::size_t at = name.find('@');
  const std::size_t dot = name.rfind('.');
  return std::string(name.substr(0, at + 1)) + std::string(name.substr(dot));
}

std::string prefix_of(std::string_view name) {
  const std::size_t at = name.find('@');
  return std::string(name.substr(0, at != std::string_view::npos ? at : name.rfind('.')));
}

std::string instance_of(std::string_view name) {
  if (!is_instance_name(name)) {
    return {};
  }
  const std::size_t at = name.find('@');
  return std::string(name.substr(at + 1, name.rfind('.') - at - 1));
}

std::optional<ServiceUnitName> parse_service_unit_name(std::string_view text, std::string& problem) {
  if (text.empty()) {
    problem = "no unit name";
    return std::nullopt;
  }
  if (text.find('/') != std::string_view::npos) {
    problem = "'" + std::string(text) + "' is a path: give the unit's name (nginx.service)";
    return std::nullopt;
  }
  std::string name(text);
  const std::string_view type = unit_type_of(name);
  if (type.empty()) {
    name += kServiceSuffix;  // as systemctl does
  } else if (type != "service") {
    problem = name + " is a " + std::string(type) + " unit, not a service: only a service runs a program to tune";
    if (type == "socket" || type == "timer" || type == "path") {
      problem += " (enable the service this " + std::string(type) + " starts)";
    }
    return std::nullopt;
  }
  if (const std::string why = name_problem(name); !why.empty()) {
    problem = "'" + name + "' is not a valid unit name: " + why;
    return std::nullopt;
  }
  ServiceUnitName unit;
  unit.name = name;
  unit.is_instance = is_instance_name(name);
  unit.is_template = !unit.is_instance && name.find('@') != std::string::npos;
  unit.instance = instance_of(name);
  return unit;
}

}  // namespace tcptune::cli
