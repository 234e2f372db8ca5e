#include "tcptune/config/units.hpp"

#include <array>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>

namespace tcptune::config {

namespace {

struct Unit {
  std::string_view suffix;
  double factor;
};

// "12.5MB" -> 12.5 and "MB". The number must be non-negative and finite.
bool split_number(std::string_view text, double& number, std::string_view& suffix) {
  std::size_t i = 0;
  while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) != 0 || text[i] == '.')) {
    ++i;
  }
  if (i == 0) {
    return false;
  }
  const std::string digits(text.substr(0, i));
  char* end = nullptr;
  number = std::strtod(digits.c_str(), &end);
  if (end != digits.c_str() + digits.size() || !std::isfinite(number)) {
    return false;
  }
  suffix = text.substr(i);
  while (!suffix.empty() && suffix.front() == ' ') {
    suffix.remove_prefix(1);
  }
  return true;
}

template <typename T>
Parsed<T> fail(std::string message) {
  return Parsed<T>{std::variant<T, std::string>(std::in_place_index<1>, std::move(message))};
}
template <typename T>
Parsed<T> succeed(T value) {
  return Parsed<T>{std::variant<T, std::string>(std::in_place_index<0>, value)};
}

std::string quoted(std::string_view text) {
  return "\"" + std::string(text) + "\"";
}

template <std::size_t N>
Parsed<double> scaled(std::string_view text, const Unit (&units)[N], bool bare_allowed, const char* kind,
                      const char* valid) {
  double number = 0;
  std::string_view suffix;
  if (!split_number(text, number, suffix)) {
    return fail<double>(quoted(text) + " is not a " + kind + " (a number with a unit: " + valid + ")");
  }
  if (suffix.empty()) {
    if (bare_allowed) {
      return succeed(number);
    }
    return fail<double>(quoted(text) + " is missing a unit (" + valid + ")");
  }
  for (const Unit& unit : units) {
    if (suffix == unit.suffix) {
      return succeed(number * unit.factor);
    }
  }
  return fail<double>(quoted(text) + ": unknown unit " + quoted(suffix) + " (" + valid + ")");
}

constexpr double kKi = 1024.0;
constexpr Unit kSizeUnits[] = {
    {"B", 1},   {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"KiB", kKi}, {"MiB", kKi* kKi}, {"GiB", kKi* kKi* kKi},
    {"k", 1e3}, {"K", 1e3},  {"M", 1e6},  {"G", 1e9},
};
constexpr Unit kDurationUnits[] = {
    {"ns", 1}, {"us", 1e3}, {"µs", 1e3}, {"ms", 1e6}, {"s", 1e9}, {"m", 60e9}, {"min", 60e9}, {"h", 3600e9},
};
constexpr Unit kRateUnits[] = {
    {"bit", 1.0 / 8},
    {"Kbit", 1e3 / 8},
    {"Mbit", 1e6 / 8},
    {"Gbit", 1e9 / 8},
    {"bps", 1.0 / 8},
    {"Kbps", 1e3 / 8},
    {"Mbps", 1e6 / 8},
    {"Gbps", 1e9 / 8},
    {"bit/s", 1.0 / 8},
    {"Kbit/s", 1e3 / 8},
    {"Mbit/s", 1e6 / 8},
    {"Gbit/s", 1e9 / 8},
    {"B/s", 1},
    {"KB/s", 1e3},
    {"MB/s", 1e6},
    {"GB/s", 1e9},
    {"KiB/s", kKi},
    {"MiB/s", kKi* kKi},
    {"GiB/s", kKi* kKi* kKi},
};

// Rounding by hand: the shim links no libm (its only run-time dependency is libc).
double round_up(double value) {
  const auto whole = static_cast<double>(static_cast<std::uint64_t>(value));
  return whole < value ? whole + 1 : whole;
}

Parsed<std::uint64_t> to_u64(const Parsed<double>& parsed, std::string_view text) {
  if (!parsed.ok()) {
    return fail<std::uint64_t>(parsed.error());
  }
  // Checked before any conversion: a double beyond uint64_t's range converts to garbage (UB).
  if (parsed.value() >= 1.8e19) {
    return fail<std::uint64_t>(quoted(text) + " is too large");
  }
  return succeed(static_cast<std::uint64_t>(round_up(parsed.value())));
}

// `amount` / `scale` and its unit, to three significant digits as %.3g rounds them (a whole
// number in full). By hand: formatting a double costs microseconds, and the report of a
// supervised connect formats several while the program's call waits.
std::string decimal(std::uint64_t amount, std::uint64_t scale, const char* unit) {
  const std::uint64_t whole = amount / scale;
  std::string text;
  if (amount % scale == 0 || whole >= 1000) {
    text = std::to_string((amount + scale / 2) / scale);
  } else {
    const int places = whole >= 100 ? 0 : whole >= 10 ? 1 : 2;
    const std::uint64_t factor = places == 0 ? 1 : places == 1 ? 10 : 100;
    // Half up, from the remainder (below scale), so that nothing passes 2^64.
    const std::uint64_t rounded = whole * factor + ((amount % scale) * factor * 2 + scale) / (scale * 2);
    text = std::to_string(rounded / factor);
    std::string fraction = std::to_string(rounded % factor);
    fraction.insert(0, static_cast<std::size_t>(places) - std::min(fraction.size(), static_cast<std::size_t>(places)),
                    '0');
    while (!fraction.empty() && fraction.back() == '0') {
      fraction.pop_back();
    }
    if (!fraction.empty()) {
      text += "." + fraction;
    }
  }
  return text + " " + unit;
}

struct OutputUnit {
  std::uint64_t scale;
  const char* name;
};

// `amount` in the largest of `units` (largest first, the last of scale 1) it reaches.
std::string in_largest_unit(std::uint64_t amount, const std::array<OutputUnit, 4>& units) {
  for (const OutputUnit& unit : units) {
    if (amount >= unit.scale || unit.scale == 1) {
      return decimal(amount, unit.scale, unit.name);
    }
  }
  return decimal(amount, 1, "");
}

}  // namespace

Parsed<std::uint64_t> parse_size(std::string_view text) {
  return to_u64(scaled(text, kSizeUnits, true, "size", "B, KB, MB, GB, KiB, MiB, GiB"), text);
}

Parsed<Duration> parse_duration(std::string_view text) {
  const Parsed<double> ns = scaled(text, kDurationUnits, false, "duration", "ns, us, ms, s, m, h");
  if (!ns.ok()) {
    return fail<Duration>(ns.error());
  }
  if (ns.value() > 9.2e18) {
    return fail<Duration>(quoted(text) + " is too long");
  }
  // Nearest nanosecond, halves up; "+ 0.5 then truncate" is off by one above 2^52 ns.
  const auto whole = static_cast<std::int64_t>(ns.value());
  return succeed(Duration(ns.value() - static_cast<double>(whole) >= 0.5 ? whole + 1 : whole));
}

Parsed<std::uint64_t> parse_rate(std::string_view text) {
  return to_u64(scaled(text, kRateUnits, false, "rate",
                       "bit, Kbit, Mbit, Gbit (or bps forms), B/s, KB/s, MB/s, GB/s, KiB/s, MiB/s"),
                text);
}

namespace {
// 4000000 -> "4,000,000".
std::string grouped(std::uint64_t value) {
  std::string digits = std::to_string(value);
  for (std::size_t at = digits.size(); at > 3; at -= 3) {
    digits.insert(at - 3, ",");
  }
  return digits;
}
}  // namespace

std::string ambiguous_size_reading(std::string_view text) {
  double number = 0;
  std::string_view suffix;
  if (!split_number(text, number, suffix) || suffix.size() != 1) {
    return {};
  }
  // The single letters of sysctl, ulimit and dd, which mean powers of 1024 there.
  static constexpr std::string_view kBinary[] = {"KiB", "KiB", "MiB", "GiB"};
  static constexpr std::string_view kLetters = "kKMG";
  const std::size_t at = kLetters.find(suffix.front());
  const Parsed<std::uint64_t> decimal_bytes = parse_size(text);
  if (at == std::string_view::npos || !decimal_bytes.ok()) {
    return {};
  }
  const std::string binary_text = std::string(text.substr(0, text.size() - 1)) + std::string(kBinary[at]);
  const Parsed<std::uint64_t> binary_bytes = parse_size(binary_text);
  std::string out =
      quoted(text) + " read as " + grouped(decimal_bytes.value()) + " bytes (k, K, M and G are powers of 1000 here";
  if (binary_bytes.ok()) {
    out += "; " + quoted(binary_text) + " is " + grouped(binary_bytes.value());
  }
  return out + ")";
}

std::string format_size(std::uint64_t bytes) {
  return in_largest_unit(bytes, {{{1000000000ULL, "GB"}, {1000000ULL, "MB"}, {1000ULL, "kB"}, {1, "B"}}});
}

std::string format_duration(Duration d) {
  if (d.count() < 0) {
    return "-" + format_duration(-d);
  }
  return in_largest_unit(static_cast<std::uint64_t>(d.count()),
                         {{{1000000000ULL, "s"}, {1000000ULL, "ms"}, {1000ULL, "us"}, {1, "ns"}}});
}

// In bytes: bits = 8 * bytes, so a Gbit/s is 125,000,000 B/s (and 8 * bytes could pass 2^64).
std::string format_rate(std::uint64_t bytes_per_s) {
  if (bytes_per_s < 125) {
    return decimal(bytes_per_s * 8, 1, "bit/s");
  }
  return in_largest_unit(bytes_per_s, {{{125000000ULL, "Gbit/s"}, {125000ULL, "Mbit/s"}, {125ULL, "Kbit/s"}, {1, ""}}});
}

}  // namespace tcptune::config
