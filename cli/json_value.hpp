// A small JSON reader for the shim's records (RFC 8259 values; numbers as double, which is
// exact for the counts and times the records carry). The CLI reads the records through their
// documented JSON, never through shim headers.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace tcptune::cli {

class JsonValue {
 public:
  using Array = std::vector<JsonValue>;
  using Object = std::map<std::string, JsonValue, std::less<>>;

  JsonValue() = default;
  explicit JsonValue(bool value) : value_(value) {}
  explicit JsonValue(double value) : value_(value) {}
  explicit JsonValue(std::string value) : value_(std::move(value)) {}
  explicit JsonValue(Array value) : value_(std::move(value)) {}
  explicit JsonValue(Object value) : value_(std::move(value)) {}

  [[nodiscard]] bool is_object() const { return std::holds_alternative<Object>(value_); }
  [[nodiscard]] bool is_array() const { return std::holds_alternative<Array>(value_); }
  // The member, or nullptr (also when this is not an object).
  [[nodiscard]] const JsonValue* get(std::string_view key) const;
  [[nodiscard]] double number_or(double fallback) const;
  [[nodiscard]] std::string string_or(std::string fallback) const;
  [[nodiscard]] bool bool_or(bool fallback) const;
  [[nodiscard]] const Array& array() const;  // empty for a non-array
  // Shorthands for a member.
  [[nodiscard]] double number(std::string_view key, double fallback = 0) const;
  [[nodiscard]] std::string string(std::string_view key, std::string fallback = "") const;

 private:
  std::variant<std::nullptr_t, bool, double, std::string, Array, Object> value_{nullptr};
};

// The value of the whole text, or nullopt with a reason in `error` (trailing text is an error).
std::optional<JsonValue> parse_json(std::string_view text, std::string& error);

}  // namespace tcptune::cli
