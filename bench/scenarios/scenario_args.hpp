// Command-line options shared by the scenario apps: "--name value" pairs and bare flags,
// with the policy's unit syntax for sizes, durations and rates. A bad option ends the
// program with exit status 2 and a one-line message naming it.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

namespace tcptune::bench {

class ScenarioArgs {
 public:
  // argv[1] is the role ("send", "receive", ...); the rest are options.
  ScenarioArgs(std::string_view program, int argc, char** argv);

  [[nodiscard]] const std::string& role() const { return role_; }
  [[nodiscard]] bool flag(const std::string& name) const;
  [[nodiscard]] std::string text(const std::string& name, const std::string& fallback) const;
  [[nodiscard]] std::uint64_t count(const std::string& name, std::uint64_t fallback) const;
  [[nodiscard]] std::uint64_t size_bytes(const std::string& name, std::uint64_t fallback) const;
  [[nodiscard]] double seconds(const std::string& name, double fallback) const;
  // Fails on any option no accessor asked for, so a typo cannot silently change a benchmark.
  void reject_unused() const;
  [[noreturn]] void fail(const std::string& message) const;

 private:
  std::string program_;
  std::string role_;
  std::map<std::string, std::string> values_;
  mutable std::map<std::string, bool> used_;
};

}  // namespace tcptune::bench
