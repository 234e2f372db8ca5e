#include "units.hpp"

#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "tcptune/config/units.hpp"

namespace tcptune::linkem {

namespace {

std::string quoted(std::string_view text) {
  return "\"" + std::string(text) + "\"";
}

}  // namespace

// The policy's own unit syntax (config/units), plus a bare "0": no delay, unlimited rate.
std::optional<std::int64_t> parse_duration_ns(std::string_view text, std::string& error) {
  if (text == "0") {
    return 0;
  }
  const auto parsed = config::parse_duration(text);
  if (!parsed.ok()) {
    error = parsed.error();
    return std::nullopt;
  }
  // An hour is far beyond any link this emulates; the bound keeps all later arithmetic in range.
  if (parsed.value() > std::chrono::hours(1)) {
    error = quoted(text) + " is too long (at most 3600s)";
    return std::nullopt;
  }
  return static_cast<std::int64_t>(parsed.value().count());
}

std::optional<std::uint64_t> parse_rate_bps(std::string_view text, std::string& error) {
  if (text == "0") {
    return 0;
  }
  const auto parsed = config::parse_rate(text);
  if (!parsed.ok()) {
    error = parsed.error();
    return std::nullopt;
  }
  const std::uint64_t bps = parsed.value() * 8;
  if (bps > 1'000'000'000'000ULL) {
    error = quoted(text) + " is too fast (at most 1000Gbit)";
    return std::nullopt;
  }
  if (bps < 1000) {
    error = quoted(text) + " is too slow (at least 1Kbit, or 0 for unlimited)";
    return std::nullopt;
  }
  return bps;
}

std::optional<std::uint64_t> parse_count(std::string_view text, std::uint64_t max, std::string& error) {
  std::uint64_t value = 0;
  if (text.empty()) {
    error = "\"\" is not a number";
    return std::nullopt;
  }
  for (const char c : text) {
    if (std::isdigit(static_cast<unsigned char>(c)) == 0) {
      error = quoted(text) + " is not a non-negative integer";
      return std::nullopt;
    }
    const auto digit = static_cast<std::uint64_t>(c - '0');
    if (value > (max - digit) / 10) {
      error = quoted(text) + " is too large (at most " + std::to_string(max) + ")";
      return std::nullopt;
    }
    value = value * 10 + digit;
  }
  return value;
}

std::optional<double> parse_percent(std::string_view text, std::string& error) {
  if (text.ends_with('%')) {
    text.remove_suffix(1);
  }
  // Plain non-negative decimals only ("5", "0.1"): no signs, exponents or spaces.
  const std::string digits(text);
  char* end = nullptr;
  const double number = std::strtod(digits.c_str(), &end);
  if (digits.empty() || digits.find_first_not_of("0123456789.") != std::string::npos ||
      end != digits.c_str() + digits.size() || !std::isfinite(number)) {
    error = quoted(text) + " is not a percentage (e.g. 5, 0.1 or 2.5%)";
    return std::nullopt;
  }
  if (number > 100) {
    error = quoted(text) + " is above 100%";
    return std::nullopt;
  }
  return number;
}

std::string format_decimal(double value, int decimals) {
  char buffer[64];
  (void)std::snprintf(buffer, sizeof buffer, "%.*f", decimals, value);
  std::string text(buffer);
  if (text.find('.') != std::string::npos) {
    while (text.back() == '0') {
      text.pop_back();
    }
    if (text.back() == '.') {
      text.pop_back();
    }
  }
  if (text == "-0") {
    text = "0";
  }
  return text;
}

}  // namespace tcptune::linkem
