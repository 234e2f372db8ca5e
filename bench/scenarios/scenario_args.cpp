#include "scenario_args.hpp"

#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "tcptune/config/units.hpp"

namespace tcptune::bench {

ScenarioArgs::ScenarioArgs(std::string_view program, int argc, char** argv) : program_(program) {
  if (argc < 2 || argv[1][0] == '-') {
    fail("the first argument must be the role");
  }
  role_ = argv[1];
  for (int i = 2; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (!arg.starts_with("--")) {
      fail("unexpected argument '" + std::string(arg) + "'");
    }
    std::string name(arg.substr(2));
    // An option takes the next argument as its value unless that is another option.
    if (i + 1 < argc && std::string_view(argv[i + 1]).substr(0, 2) != "--") {
      values_[name] = argv[++i];
    } else {
      values_[name] = "";
    }
  }
}

bool ScenarioArgs::flag(const std::string& name) const {
  used_[name] = true;
  return values_.contains(name);
}

std::string ScenarioArgs::text(const std::string& name, const std::string& fallback) const {
  used_[name] = true;
  const auto it = values_.find(name);
  if (it == values_.end()) {
    return fallback;
  }
  if (it->second.empty()) {
    fail("--" + name + " needs a value");
  }
  return it->second;
}

std::uint64_t ScenarioArgs::count(const std::string& name, std::uint64_t fallback) const {
  const std::string value = text(name, "");
  if (value.empty()) {
    return fallback;
  }
  char* end = nullptr;
  const unsigned long long parsed = std::strtoull(value.c_str(), &end, 10);
  if (*end != '\0') {
    fail("--" + name + " wants a whole number, not '" + value + "'");
  }
  return parsed;
}

std::uint64_t ScenarioArgs::size_bytes(const std::string& name, std::uint64_t fallback) const {
  const std::string value = text(name, "");
  if (value.empty()) {
    return fallback;
  }
  const auto parsed = config::parse_size(value);
  if (!parsed.ok()) {
    fail("--" + name + ": " + parsed.error());
  }
  return parsed.value();
}

double ScenarioArgs::seconds(const std::string& name, double fallback) const {
  const std::string value = text(name, "");
  if (value.empty()) {
    return fallback;
  }
  const auto parsed = config::parse_duration(value);
  if (!parsed.ok()) {
    fail("--" + name + ": " + parsed.error());
  }
  return std::chrono::duration<double>(parsed.value()).count();
}

void ScenarioArgs::reject_unused() const {
  for (const auto& [name, value] : values_) {
    if (!used_.contains(name)) {
      fail("unknown option --" + name + " for role '" + role_ + "'");
    }
  }
}

void ScenarioArgs::fail(const std::string& message) const {
  std::fprintf(stderr, "%s: %s\n", program_.c_str(), message.c_str());
  std::exit(2);
}

}  // namespace tcptune::bench
