// Parsing of the policy's quantities: sizes ("64KiB", "4MB"), durations ("500us", "2s")
// and rates ("100Mbit", "12.5MB/s"). Each returns the value or a one-line reason.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

#include "tcptune/config/policy.hpp"

namespace tcptune::config {

template <typename T>
struct Parsed {
  std::variant<T, std::string> value_or_error;
  [[nodiscard]] bool ok() const { return value_or_error.index() == 0; }
  [[nodiscard]] const T& value() const { return std::get<0>(value_or_error); }
  [[nodiscard]] const std::string& error() const { return std::get<1>(value_or_error); }
  // By index, so that Parsed<std::string> can tell a value from a reason.
  static Parsed success(T value) { return {std::variant<T, std::string>(std::in_place_index<0>, std::move(value))}; }
  static Parsed failure(std::string reason) {
    return {std::variant<T, std::string>(std::in_place_index<1>, std::move(reason))};
  }
};

// Bytes. Suffixes: B, KB/MB/GB (powers of 1000), KiB/MiB/GiB (powers of 1024); bare numbers are bytes.
Parsed<std::uint64_t> parse_size(std::string_view text);
// Suffixes: ns, us, ms, s, m, h. A bare number is rejected (ambiguous).
Parsed<Duration> parse_duration(std::string_view text);
// Bytes per second. Suffixes: bit/Kbit/Mbit/Gbit (and bps forms) or B/s, KB/s, MB/s, GB/s, KiB/s...
Parsed<std::uint64_t> parse_rate(std::string_view text);

// How a size whose unit people read two ways was taken: "\"4M\" read as 4,000,000 bytes (k, K, M
// and G are powers of 1000 here; \"4MiB\" is 4,194,304)", or "" for an unambiguous or invalid one.
std::string ambiguous_size_reading(std::string_view text);

// Human forms for messages: "22.5 MB", "180 ms", "1 Gbit/s".
std::string format_size(std::uint64_t bytes);
std::string format_duration(Duration d);
std::string format_rate(std::uint64_t bytes_per_s);

}  // namespace tcptune::config
