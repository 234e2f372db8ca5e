// One JSON object on one line, built field by field: the shape of every telemetry record.
// Worker-side only (it allocates). Strings are escaped per RFC 8259; non-finite numbers,
// which JSON cannot carry, are written as null.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace tcptune::telemetry {

class JsonObject {
 public:
  // Room for a typical record's nested object (tcp_info, a latency summary) from the start: grown
  // by doubling from "{", a record's objects were reallocated and copied half a dozen times each.
  JsonObject() { body_.reserve(kTypicalSize); }
  static constexpr std::size_t kTypicalSize = 320;
  void reserve(std::size_t size) { body_.reserve(size); }

  JsonObject& field(std::string_view name, std::string_view value);
  JsonObject& field(std::string_view name, const char* value) { return field(name, std::string_view(value)); }
  JsonObject& field(std::string_view name, std::int64_t value);
  JsonObject& field(std::string_view name, std::uint64_t value);
  JsonObject& field(std::string_view name, int value) { return field(name, static_cast<std::int64_t>(value)); }
  JsonObject& field(std::string_view name, unsigned value) { return field(name, static_cast<std::uint64_t>(value)); }
  JsonObject& field(std::string_view name, double value);
  JsonObject& field(std::string_view name, bool value);
  // value must already be valid JSON (a nested object or array).
  JsonObject& raw(std::string_view name, std::string_view json);
  // The finished object, "{...}".
  [[nodiscard]] std::string str() const { return body_ + "}"; }
  // The object so far, without its closing brace: "{" then the fields, comma-separated.
  [[nodiscard]] const std::string& open_body() const { return body_; }

 private:
  void key(std::string_view name);
  std::string body_ = "{";
};

// "[a,b,...]" from already-rendered JSON values.
class JsonArray {
 public:
  JsonArray& add_raw(std::string_view json);
  [[nodiscard]] std::string str() const { return body_ + "]"; }

 private:
  std::string body_ = "[";
};

void append_json_string(std::string& out, std::string_view text);
// `value` in decimal, as std::to_string writes it, without a string of its own.
template <typename Integer>
void append_integer(std::string& out, Integer value);
// `value` as printf's "%.6g" writes it: six significant digits, the exponent form for large and
// small values.
void append_general(std::string& out, double value);

}  // namespace tcptune::telemetry
