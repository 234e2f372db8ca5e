#include "log_record.hpp"

namespace tcptune::cli {

namespace {

const nlohmann::json* member(const nlohmann::json& record, std::string_view key) {
  if (!record.is_object()) {
    return nullptr;
  }
  const auto found = record.find(key);
  return found == record.end() ? nullptr : &*found;
}

}  // namespace

std::optional<nlohmann::json> parse_log_record(std::string_view line) {
  nlohmann::json record = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (!record.is_object()) {  // also a parse error, which leaves a discarded value
    return std::nullopt;
  }
  return record;
}

std::uint64_t as_count(const nlohmann::json& value) {
  if (value.is_number_unsigned()) {
    return value.get<std::uint64_t>();
  }
  if (value.is_number_float()) {
    // A double outside uint64_t's range does not convert (undefined behaviour).
    const auto number = value.get<double>();
    return number >= 0 && number < 1.8e19 ? static_cast<std::uint64_t>(number) : 0;
  }
  return 0;  // negative, or not a number
}

double as_number(const nlohmann::json& value) {
  return value.is_number() ? value.get<double>() : 0;
}

std::uint64_t count_field(const nlohmann::json& record, std::string_view key) {
  const nlohmann::json* value = member(record, key);
  return value != nullptr ? as_count(*value) : 0;
}

double number_field(const nlohmann::json& record, std::string_view key) {
  const nlohmann::json* value = member(record, key);
  return value != nullptr ? as_number(*value) : 0;
}

std::string string_field(const nlohmann::json& record, std::string_view key, const std::string& fallback) {
  const nlohmann::json* value = member(record, key);
  return value != nullptr && value->is_string() ? value->get<std::string>() : fallback;
}

}  // namespace tcptune::cli
