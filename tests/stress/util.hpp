// Small helpers shared by the stress program's modes: arguments, time, loopback sockets, JSON.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tcptune::stress {

// `--name value` pairs and bare `--flag`s after the mode; unknown names are an error.
class Args {
 public:
  Args(int argc, char** argv, int first, const std::vector<std::string>& known);
  [[nodiscard]] std::string text(const std::string& name, const std::string& fallback) const;
  [[nodiscard]] std::int64_t number(const std::string& name, std::int64_t fallback) const;
  [[nodiscard]] bool flag(const std::string& name) const;

 private:
  std::map<std::string, std::string> values_;
};

std::int64_t monotonic_ns() noexcept;
void sleep_ns(std::int64_t ns) noexcept;  // the whole time, through EINTR

// Raises RLIMIT_NOFILE to at least `wanted` where allowed (root may raise the hard limit);
// returns the soft limit in force.
std::uint64_t raise_fd_limit(std::uint64_t wanted) noexcept;
std::uint64_t resident_bytes() noexcept;  // this process's RSS, from /proc/self/statm

// Accumulates one JSON object, fields in insertion order.
class Json {
 public:
  Json& field(std::string_view name, std::int64_t value);
  Json& field(std::string_view name, std::uint64_t value);
  Json& field(std::string_view name, int value) { return field(name, static_cast<std::int64_t>(value)); }
  Json& field(std::string_view name, double value);
  Json& field(std::string_view name, std::string_view value);
  Json& field(std::string_view name, const char* value) { return field(name, std::string_view(value)); }
  Json& raw(std::string_view name, std::string_view json);
  [[nodiscard]] std::string str() const { return "{" + body_ + "}"; }

 private:
  void name(std::string_view name);
  std::string body_;
};
std::string json_string(std::string_view text);

[[noreturn]] void die(const std::string& message);

}  // namespace tcptune::stress
