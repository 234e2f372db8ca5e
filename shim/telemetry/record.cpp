#include "record.hpp"

#include <cstdio>

namespace tcptune::telemetry {

Record::Record(std::string_view event) : event_(event), text_(event) {
  json_.field("event", event);
}

void Record::add_text(std::string_view key, std::string_view value, bool quote) {
  text_ += ' ';
  text_ += key;
  text_ += '=';
  // Quoted when it could not be read back as one word.
  if (quote && (value.empty() || value.find_first_of(" \"=") != std::string_view::npos)) {
    append_json_string(text_, value);
  } else {
    text_ += value;
  }
}

Record& Record::add(std::string_view key, std::string_view value) {
  add_text(key, value, true);
  json_.field(key, value);
  return *this;
}

Record& Record::add(std::string_view key, std::int64_t value) {
  add_text(key, std::to_string(value), false);
  json_.field(key, value);
  return *this;
}

Record& Record::add(std::string_view key, std::uint64_t value) {
  add_text(key, std::to_string(value), false);
  json_.field(key, value);
  return *this;
}

Record& Record::add(std::string_view key, double value) {
  char number[32];
  (void)std::snprintf(number, sizeof number, "%.6g", value);
  add_text(key, number, false);
  json_.field(key, value);
  return *this;
}

Record& Record::add(std::string_view key, bool value) {
  add_text(key, value ? "true" : "false", false);
  json_.field(key, value);
  return *this;
}

Record& Record::add_json(std::string_view key, std::string_view json, std::string_view text) {
  add_text(key, text, false);
  json_.raw(key, json);
  return *this;
}

Record& Record::add_json_section(std::string_view key, std::string_view json, std::string_view text) {
  if (!text.empty()) {
    text_ += " |";
    text_ += text;
  }
  json_.raw(key, json);
  return *this;
}

std::string Record::json_fields() const {
  const std::string object = json_.str();
  return object.substr(1, object.size() - 2);
}

}  // namespace tcptune::telemetry
