// The policy's values, one small pure function each: a TOML value in, the field's value or the
// one-line reason out. The reason has no position; the loader adds "FILE:LINE:COLUMN: ".
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "tcptune/config/policy.hpp"
#include "tcptune/config/units.hpp"

namespace tcptune::config {

// A TOML value as the parsers see it: its type and, for a scalar, its content. The loader makes
// one from each toml++ node; tests write them directly.
struct PolicyValue {
  enum class Type { string, integer, floating_point, boolean, table, array, date_time };
  Type type = Type::string;
  std::string text;
  std::int64_t integer = 0;
  double floating_point = 0;
  bool boolean = false;

  static PolicyValue of_string(std::string_view text);
  static PolicyValue of_integer(std::int64_t value);
  static PolicyValue of_float(double value);
  static PolicyValue of_bool(bool value);
  static PolicyValue of_type(Type type);  // a table, an array, a date or time
};

// How a message quotes the value: "\"on\"", "3", "true", "a table".
std::string describe(const PolicyValue& value);

// Values of any key: `name` is the key, as messages quote it.
Parsed<std::string> parse_string(const PolicyValue& value, std::string_view name);
Parsed<bool> parse_bool(const PolicyValue& value, std::string_view name);
Parsed<std::int64_t> parse_integer(const PolicyValue& value, std::string_view name, std::int64_t min, std::int64_t max);
// "64KiB" or an integer of bytes, from min to max.
Parsed<std::uint64_t> parse_size_value(const PolicyValue& value, std::string_view name, std::uint64_t min,
                                       std::uint64_t max);
// "500ms", from min to max.
Parsed<Duration> parse_duration_value(const PolicyValue& value, std::string_view name, Duration min, Duration max);

// version = 1
Parsed<int> parse_version(const PolicyValue& value);

// Tuning keys.
Parsed<NodelayMode> parse_nodelay(const PolicyValue& value);
Parsed<std::string> parse_congestion(const PolicyValue& value);
Parsed<int> parse_tos(const PolicyValue& value);                  // 0..255, a number or "0x10"
Parsed<std::uint64_t> parse_bandwidth(const PolicyValue& value);  // a rate above zero
// buffers.rtt and keep_warm.interval: "auto" (nullopt) or a duration.
Parsed<std::optional<Duration>> parse_rtt(const PolicyValue& value);
Parsed<std::optional<Duration>> parse_keep_warm_interval(const PolicyValue& value);
Parsed<Duration> parse_keep_warm_max_idle(const PolicyValue& value);
Parsed<std::string> parse_heartbeat(const PolicyValue& value);  // 1 to 64 bytes
Parsed<std::string> parse_heartbeat_hex(const PolicyValue& value);

// match = { role, port, ... }
Parsed<Role> parse_role(const PolicyValue& value);
Parsed<PortRange> parse_port(const PolicyValue& value);  // 443 or "8000-8100"
Parsed<std::string> parse_rule_name(const PolicyValue& value);

// [log]
Parsed<LogLevel> parse_log_level(const PolicyValue& value);
Parsed<LogFormat> parse_log_format(const PolicyValue& value);
Parsed<int> parse_log_keep(const PolicyValue& value);

}  // namespace tcptune::config
