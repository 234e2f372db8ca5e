#include "request_latency_file.hpp"

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <string>

namespace tcptune::cli {

namespace {

std::string_view trimmed(std::string_view text) {
  const auto first = text.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos) {
    return {};
  }
  const auto last = text.find_last_not_of(" \t\r\n");
  return text.substr(first, last - first + 1);
}

}  // namespace

double parse_latency_line(std::string_view line) {
  const std::string text(trimmed(line));
  if (text.empty()) {
    return -1;
  }
  // strtod, not from_chars: "1e-3" and ".25" are numbers too; the locale is "C" (tcptune never
  // calls setlocale), so the decimal point is '.'.
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || !std::isfinite(value) || value < 0) {
    return -1;
  }
  // strtod also reads hexadecimal ("0x10" is 16): a decimal number only, so that an id or an
  // address a program prints there is not taken for seconds.
  if (std::string_view(text.c_str(), static_cast<std::size_t>(end - text.c_str()))
          .find_first_not_of("0123456789.eE+-") != std::string_view::npos) {
    return -1;
  }
  const std::string_view unit = trimmed(std::string_view(end));
  if (unit.empty() || unit == "s") {
    return value * 1e3;
  }
  if (unit == "ms") {
    return value;
  }
  if (unit == "us") {
    return value / 1e3;
  }
  if (unit == "ns") {
    return value / 1e6;
  }
  return -1;
}

RequestLatencies read_request_latencies(const std::string& path) {
  RequestLatencies out;
  std::ifstream in(path);
  if (!in) {
    return out;
  }
  out.readable = true;
  std::string line;
  std::uint64_t number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (trimmed(line).empty()) {
      continue;
    }
    const double ms = parse_latency_line(line);
    if (ms >= 0) {
      out.ms.push_back(ms);
    } else if (out.bad_lines++ == 0) {
      out.first_bad = "line " + std::to_string(number) + ": '" + line.substr(0, 60) + "'";
    }
  }
  return out;
}

}  // namespace tcptune::cli
