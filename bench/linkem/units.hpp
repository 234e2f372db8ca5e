// Command-line quantities of the link: durations ("90ms", "500us", "1.5s") and rates ("100Mbit",
// "12.5MB/s", "1Gbit"). Parsers return std::nullopt and set 'error' to a one-line reason on failure.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace tcptune::linkem {

// Nanoseconds. Suffixes: ns, us, ms, s. A bare number is rejected except "0" (ambiguous otherwise).
std::optional<std::int64_t> parse_duration_ns(std::string_view text, std::string& error);
// Bits per second. Suffixes: bit, Kbit, Mbit, Gbit (also bps/Kbps/Mbps/Gbps, .../s forms) and byte rates
// B/s, KB/s, MB/s, GB/s, KiB/s, MiB/s, GiB/s. "0" alone means unlimited.
std::optional<std::uint64_t> parse_rate_bps(std::string_view text, std::string& error);
// A non-negative integer that fits in 'max'.
std::optional<std::uint64_t> parse_count(std::string_view text, std::uint64_t max, std::string& error);
// A finite percentage in [0, 100].
std::optional<double> parse_percent(std::string_view text, std::string& error);

// Shortest decimal form of a value for JSON and messages: 40, 0.5, 96.53 (at most 'decimals' places).
std::string format_decimal(double value, int decimals = 3);

}  // namespace tcptune::linkem
