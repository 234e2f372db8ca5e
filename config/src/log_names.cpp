#include "tcptune/config/log_names.hpp"

#include <span>
#include <utility>

namespace tcptune::config {

namespace {

constexpr std::pair<std::string_view, LogLevel> kLevelNames[] = {{"trace", LogLevel::trace}, {"debug", LogLevel::debug},
                                                                 {"info", LogLevel::info},   {"warn", LogLevel::warn},
                                                                 {"error", LogLevel::error}, {"off", LogLevel::off}};

constexpr std::pair<std::string_view, LogFormat> kFormatNames[] = {{"text", LogFormat::text},
                                                                   {"jsonl", LogFormat::jsonl}};

template <typename T>
std::optional<T> named(std::span<const std::pair<std::string_view, T>> names, std::string_view name) {
  for (const auto& [known, value] : names) {
    if (known == name) {
      return value;
    }
  }
  return std::nullopt;
}

template <typename T>
std::string join(std::span<const std::pair<std::string_view, T>> names, std::string_view quote,
                 std::string_view separator, std::string_view last_separator) {
  std::string out;
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (i != 0) {
      out += i + 1 == names.size() ? last_separator : separator;
    }
    out.append(quote).append(names[i].first).append(quote);
  }
  return out;
}

}  // namespace

std::optional<LogLevel> log_level_named(std::string_view name) {
  return named<LogLevel>(kLevelNames, name);
}

std::optional<LogFormat> log_format_named(std::string_view name) {
  return named<LogFormat>(kFormatNames, name);
}

std::string log_level_names(std::string_view quote, std::string_view separator, std::string_view last_separator) {
  return join<LogLevel>(kLevelNames, quote, separator, last_separator);
}

std::string log_format_names(std::string_view quote, std::string_view separator, std::string_view last_separator) {
  return join<LogFormat>(kFormatNames, quote, separator, last_separator);
}

}  // namespace tcptune::config
