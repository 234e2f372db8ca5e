#include "tcptune/config/value_parsers.hpp"

#include <algorithm>
#include <cstdlib>
#include <sstream>
#include <utility>

#include "tcptune/config/escape.hpp"
#include "tcptune/config/log_names.hpp"

namespace tcptune::config {

namespace {

std::string quoted(std::string_view name) {
  return "'" + std::string(name) + "'";
}

// One of `names` (the value's text), or the message listing them.
template <typename T, std::size_t N>
Parsed<T> one_of(const PolicyValue& value, const std::pair<std::string_view, T> (&names)[N],
                 const std::string& message) {
  if (value.type == PolicyValue::Type::string) {
    for (const auto& [name, result] : names) {
      if (value.text == name) {
        return Parsed<T>::success(result);
      }
    }
  }
  return Parsed<T>::failure(message + describe(value));
}

}  // namespace

PolicyValue PolicyValue::of_string(std::string_view text) {
  PolicyValue value;
  value.type = Type::string;
  value.text = text;
  return value;
}

PolicyValue PolicyValue::of_integer(std::int64_t integer) {
  PolicyValue value;
  value.type = Type::integer;
  value.integer = integer;
  return value;
}

PolicyValue PolicyValue::of_float(double floating_point) {
  PolicyValue value;
  value.type = Type::floating_point;
  value.floating_point = floating_point;
  return value;
}

PolicyValue PolicyValue::of_bool(bool boolean) {
  PolicyValue value;
  value.type = Type::boolean;
  value.boolean = boolean;
  return value;
}

PolicyValue PolicyValue::of_type(Type type) {
  PolicyValue value;
  value.type = type;
  return value;
}

std::string describe(const PolicyValue& value) {
  std::ostringstream out;
  switch (value.type) {
    case PolicyValue::Type::string: out << '"' << value.text << '"'; break;
    case PolicyValue::Type::table: out << "a table"; break;
    case PolicyValue::Type::array: out << "an array"; break;
    case PolicyValue::Type::boolean: out << (value.boolean ? "true" : "false"); break;
    case PolicyValue::Type::integer: out << value.integer; break;
    case PolicyValue::Type::floating_point: out << value.floating_point; break;
    case PolicyValue::Type::date_time: out << "a date or time"; break;
  }
  return out.str();
}

Parsed<std::string> parse_string(const PolicyValue& value, std::string_view name) {
  if (value.type == PolicyValue::Type::string) {
    return Parsed<std::string>::success(value.text);
  }
  return Parsed<std::string>::failure(quoted(name) + " must be a string, not " + describe(value));
}

Parsed<bool> parse_bool(const PolicyValue& value, std::string_view name) {
  if (value.type == PolicyValue::Type::boolean) {
    return Parsed<bool>::success(value.boolean);
  }
  return Parsed<bool>::failure(quoted(name) + " must be true or false, not " + describe(value));
}

Parsed<std::int64_t> parse_integer(const PolicyValue& value, std::string_view name, std::int64_t min,
                                   std::int64_t max) {
  if (value.type != PolicyValue::Type::integer) {
    return Parsed<std::int64_t>::failure(quoted(name) + " must be an integer, not " + describe(value));
  }
  if (value.integer < min || value.integer > max) {
    return Parsed<std::int64_t>::failure(quoted(name) + " must be between " + std::to_string(min) + " and " +
                                         std::to_string(max) + ", not " + std::to_string(value.integer));
  }
  return Parsed<std::int64_t>::success(value.integer);
}

Parsed<std::uint64_t> parse_size_value(const PolicyValue& value, std::string_view name, std::uint64_t min,
                                       std::uint64_t max) {
  using Result = Parsed<std::uint64_t>;
  std::uint64_t bytes = 0;
  if (value.type == PolicyValue::Type::integer) {
    if (value.integer < 0) {
      return Result::failure(quoted(name) + " must not be negative");
    }
    bytes = static_cast<std::uint64_t>(value.integer);
  } else if (value.type == PolicyValue::Type::string) {
    const Result parsed = parse_size(value.text);
    if (!parsed.ok()) {
      return Result::failure(quoted(name) + ": " + parsed.error());
    }
    bytes = parsed.value();
  } else {
    return Result::failure(quoted(name) + " must be a size such as \"64KiB\", not " + describe(value));
  }
  if (bytes < min || bytes > max) {
    return Result::failure(quoted(name) + " must be between " + format_size(min) + " and " + format_size(max) +
                           ", not " + format_size(bytes));
  }
  return Result::success(bytes);
}

Parsed<Duration> parse_duration_value(const PolicyValue& value, std::string_view name, Duration min, Duration max) {
  if (value.type != PolicyValue::Type::string) {
    return Parsed<Duration>::failure(quoted(name) + " must be a duration such as \"500ms\", not " + describe(value));
  }
  const Parsed<Duration> parsed = parse_duration(value.text);
  if (!parsed.ok()) {
    return Parsed<Duration>::failure(quoted(name) + ": " + parsed.error());
  }
  if (parsed.value() < min || parsed.value() > max) {
    return Parsed<Duration>::failure(quoted(name) + " must be between " + format_duration(min) + " and " +
                                     format_duration(max) + ", not " + format_duration(parsed.value()));
  }
  return Parsed<Duration>::success(parsed.value());
}

Parsed<int> parse_version(const PolicyValue& value) {
  if (value.type != PolicyValue::Type::integer || value.integer != 1) {
    return Parsed<int>::failure("unsupported policy version " + describe(value) + "; this tcptune reads version = 1");
  }
  return Parsed<int>::success(1);
}

Parsed<NodelayMode> parse_nodelay(const PolicyValue& value) {
  static constexpr std::pair<std::string_view, NodelayMode> kModes[] = {{"on", NodelayMode::on},
                                                                        {"force", NodelayMode::force},
                                                                        {"off", NodelayMode::off},
                                                                        {"keep", NodelayMode::keep},
                                                                        {"on-wait", NodelayMode::on_wait}};
  return one_of(value, kModes, "'nodelay' must be one of \"on\", \"force\", \"off\", \"keep\", \"on-wait\", not ");
}

Parsed<std::string> parse_congestion(const PolicyValue& value) {
  Parsed<std::string> name = parse_string(value, "congestion");
  if (!name.ok()) {
    return name;
  }
  const std::string& s = name.value();
  // TCP_CA_NAME_MAX is 16 with the NUL.
  const bool valid = !s.empty() && s.size() <= 15 && std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
  });
  if (!valid) {
    return Parsed<std::string>::failure(
        "'congestion' \"" + s +
        "\" is not a congestion control name (lower-case letters, digits, _; at most 15), e.g. \"bbr\" or \"cubic\"");
  }
  return name;
}

Parsed<int> parse_tos(const PolicyValue& value) {
  long tos = -1;
  if (value.type == PolicyValue::Type::integer) {
    tos = static_cast<long>(value.integer);
  } else if (value.type == PolicyValue::Type::string) {
    char* end = nullptr;
    tos = std::strtol(value.text.c_str(), &end, 0);
    if (value.text.empty() || *end != '\0') {
      tos = -1;
    }
  }
  if (tos < 0 || tos > 255) {
    return Parsed<int>::failure("'tos' must be 0..255 (a number or a string such as \"0x10\"), not " + describe(value));
  }
  return Parsed<int>::success(static_cast<int>(tos));
}

Parsed<std::uint64_t> parse_bandwidth(const PolicyValue& value) {
  if (value.type != PolicyValue::Type::string) {
    return Parsed<std::uint64_t>::failure("'bandwidth' must be a rate such as \"1Gbit\", not " + describe(value));
  }
  const Parsed<std::uint64_t> rate = parse_rate(value.text);
  if (!rate.ok()) {
    return Parsed<std::uint64_t>::failure("'bandwidth': " + rate.error());
  }
  if (rate.value() == 0) {
    return Parsed<std::uint64_t>::failure("'bandwidth' must be above zero");
  }
  return Parsed<std::uint64_t>::success(rate.value());
}

Parsed<std::optional<Duration>> parse_rtt(const PolicyValue& value) {
  using Result = Parsed<std::optional<Duration>>;
  if (value.type == PolicyValue::Type::string && value.text == "auto") {
    return Result::success(std::nullopt);
  }
  const Parsed<Duration> rtt =
      parse_duration_value(value, "rtt", std::chrono::microseconds(10), std::chrono::seconds(60));
  return rtt.ok() ? Result::success(rtt.value()) : Result::failure(rtt.error());
}

Parsed<std::optional<Duration>> parse_keep_warm_interval(const PolicyValue& value) {
  using Result = Parsed<std::optional<Duration>>;
  if (value.type != PolicyValue::Type::string) {
    return Result::failure("'interval' must be \"auto\" or a duration such as \"150ms\", not " + describe(value));
  }
  if (value.text == "auto") {
    return Result::success(std::nullopt);
  }
  const Parsed<Duration> interval =
      parse_duration_value(value, "interval", std::chrono::milliseconds(10), std::chrono::hours(1));
  return interval.ok() ? Result::success(interval.value()) : Result::failure(interval.error());
}

Parsed<Duration> parse_keep_warm_max_idle(const PolicyValue& value) {
  return parse_duration_value(value, "max_idle", std::chrono::seconds(1), std::chrono::hours(24));
}

namespace {

constexpr std::size_t kMaxHeartbeat = 64;

Parsed<std::string> heartbeat_of_size(std::string payload, std::string_view name) {
  if (payload.empty()) {
    return Parsed<std::string>::failure(quoted(name) + " must not be empty (1 to 64 bytes)");
  }
  if (payload.size() > kMaxHeartbeat) {
    return Parsed<std::string>::failure(quoted(name) + " is " + std::to_string(payload.size()) + " bytes; at most " +
                                        std::to_string(kMaxHeartbeat));
  }
  return Parsed<std::string>::success(std::move(payload));
}

int hex_digit(char c) {
  if (c >= '0' && c <= '9') {
    return c - '0';
  }
  if (c >= 'a' && c <= 'f') {
    return c - 'a' + 10;
  }
  if (c >= 'A' && c <= 'F') {
    return c - 'A' + 10;
  }
  return -1;
}

}  // namespace

Parsed<std::string> parse_heartbeat(const PolicyValue& value) {
  Parsed<std::string> text = parse_string(value, "heartbeat");
  if (!text.ok()) {
    return text;
  }
  return heartbeat_of_size(text.value(), "heartbeat");
}

Parsed<std::string> parse_heartbeat_hex(const PolicyValue& value) {
  using Result = Parsed<std::string>;
  if (value.type != PolicyValue::Type::string) {
    return Result::failure("'heartbeat_hex' must be a string of hex digits such as \"0a\", not " + describe(value));
  }
  const std::string& digits = value.text;
  const auto bad = std::find_if(digits.begin(), digits.end(), [](char c) { return hex_digit(c) < 0; });
  if (bad != digits.end()) {
    const auto c = static_cast<unsigned char>(*bad);
    const std::string shown =
        c < 0x20 || c >= 0x7f ? escape_for_display(std::string(1, *bad), true) : "'" + std::string(1, *bad) + "'";
    return Result::failure("'heartbeat_hex' has " + shown + " at offset " + std::to_string(bad - digits.begin()) +
                           ": only hex digits 0-9, a-f, A-F (no spaces or 0x prefix)");
  }
  if (digits.size() % 2 != 0) {
    return Result::failure("'heartbeat_hex' has an odd number of hex digits (" + std::to_string(digits.size()) +
                           "); each byte takes two");
  }
  std::string payload;
  for (std::size_t i = 0; i < digits.size(); i += 2) {
    payload.push_back(static_cast<char>(hex_digit(digits[i]) * 16 + hex_digit(digits[i + 1])));
  }
  return heartbeat_of_size(std::move(payload), "heartbeat_hex");
}

Parsed<Role> parse_role(const PolicyValue& value) {
  static constexpr std::pair<std::string_view, Role> kRoles[] = {
      {"client", Role::client}, {"server", Role::server}, {"any", Role::any}};
  return one_of(value, kRoles, "'role' must be \"client\", \"server\" or \"any\", not ");
}

Parsed<PortRange> parse_port(const PolicyValue& value) {
  using Result = Parsed<PortRange>;
  if (value.type == PolicyValue::Type::integer) {
    if (value.integer < 1 || value.integer > 65535) {
      return Result::failure("'port' must be 1..65535, not " + std::to_string(value.integer));
    }
    const auto port = static_cast<std::uint16_t>(value.integer);
    return Result::success({port, port});
  }
  if (value.type != PolicyValue::Type::string) {
    return Result::failure("'port' must be a number, a range string such as \"8000-8100\", or an array of those, not " +
                           describe(value));
  }
  const std::string& text = value.text;
  const std::size_t dash = text.find('-');
  char* end = nullptr;
  const long first = std::strtol(text.c_str(), &end, 10);
  const bool first_ok = end != text.c_str() && (dash == std::string::npos ? *end == '\0' : end == text.c_str() + dash);
  long last = first;
  bool last_ok = true;
  if (dash != std::string::npos) {
    const char* rest = text.c_str() + dash + 1;
    last = std::strtol(rest, &end, 10);
    last_ok = end != rest && *end == '\0';
  }
  if (!first_ok || !last_ok || first < 1 || last > 65535 || first > 65535 || last < 1) {
    return Result::failure("'port' \"" + text + "\" is not a port or range such as \"8000-8100\" (1..65535)");
  }
  if (first > last) {
    return Result::failure("'port' range \"" + text + "\" is reversed; did you mean \"" + std::to_string(last) + "-" +
                           std::to_string(first) + "\"?");
  }
  return Result::success({static_cast<std::uint16_t>(first), static_cast<std::uint16_t>(last)});
}

Parsed<std::string> parse_rule_name(const PolicyValue& value) {
  Parsed<std::string> name = parse_string(value, "name");
  if (name.ok() && name.value().empty()) {
    return Parsed<std::string>::failure("'name' must not be empty");
  }
  return name;
}

Parsed<LogLevel> parse_log_level(const PolicyValue& value) {
  if (value.type == PolicyValue::Type::string) {
    if (const std::optional<LogLevel> level = log_level_named(value.text)) {
      return Parsed<LogLevel>::success(*level);
    }
  }
  return Parsed<LogLevel>::failure("'level' must be one of " + log_level_names("\"", ", ", ", ") + ", not " +
                                   describe(value));
}

Parsed<LogFormat> parse_log_format(const PolicyValue& value) {
  if (value.type == PolicyValue::Type::string) {
    if (const std::optional<LogFormat> format = log_format_named(value.text)) {
      return Parsed<LogFormat>::success(*format);
    }
  }
  return Parsed<LogFormat>::failure("'format' must be " + log_format_names("\"", ", ", " or ") + ", not " +
                                    describe(value));
}

Parsed<int> parse_log_keep(const PolicyValue& value) {
  if (value.type != PolicyValue::Type::integer || value.integer < 1 || value.integer > 100) {
    return Parsed<int>::failure("'keep' must be a whole number from 1 to 100, not " + describe(value));
  }
  return Parsed<int>::success(static_cast<int>(value.integer));
}

}  // namespace tcptune::config
