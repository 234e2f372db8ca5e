#include "json_writer.hpp"

#include <cmath>
#include <cstdio>

#include "tcptune/config/utf8.hpp"

namespace tcptune::telemetry {

// A byte that starts no valid UTF-8 character (a program named by raw bytes) becomes U+FFFD,
// so that the line stays JSON that every reader accepts.
void append_json_string(std::string& out, std::string_view text) {
  out += '"';
  std::size_t plain = 0;  // where the printable ASCII not yet appended starts: appended a run at a time
  for (std::size_t pos = 0; pos < text.size();) {
    const char c = text[pos];
    if (const auto byte = static_cast<unsigned char>(c); byte >= 0x20 && byte < 0x80 && c != '"' && c != '\\') {
      ++pos;
      continue;
    }
    out.append(text.substr(plain, pos - plain));
    const config::Utf8Character character = config::utf8_character_at(text, pos);
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (character.length == 0) {
          out += "\\ufffd";
        } else if (static_cast<unsigned char>(c) < 0x20) {
          char escaped[8];
          (void)std::snprintf(escaped, sizeof escaped, "\\u%04x", static_cast<unsigned>(c));
          out += escaped;
        } else {
          out.append(text.substr(pos, character.length));
        }
    }
    pos += character.length == 0 ? 1 : character.length;
    plain = pos;
  }
  out.append(text.substr(plain));
  out += '"';
}

void append_general(std::string& out, double value) {
  // A whole number below a million, which "%.6g" writes as an integer (most of a record's: the
  // counts, the zeros of an empty histogram), without printf; -0 keeps its sign there.
  if (value > -1e6 && value < 1e6 && value == static_cast<double>(static_cast<std::int64_t>(value)) &&
      !(value == 0 && std::signbit(value))) {
    out += std::to_string(static_cast<std::int64_t>(value));
    return;
  }
  // Not std::to_chars: libstdc++'s for floating point would make the shim depend on libm.
  char number[32];
  const int length = std::snprintf(number, sizeof number, "%.6g", value);
  out.append(number, static_cast<std::size_t>(length > 0 ? length : 0));
}

void JsonObject::key(std::string_view name) {
  if (body_.size() > 1) {
    body_ += ',';
  }
  append_json_string(body_, name);
  body_ += ':';
}

JsonObject& JsonObject::field(std::string_view name, std::string_view value) {
  key(name);
  append_json_string(body_, value);
  return *this;
}

JsonObject& JsonObject::field(std::string_view name, std::int64_t value) {
  key(name);
  body_ += std::to_string(value);
  return *this;
}

JsonObject& JsonObject::field(std::string_view name, std::uint64_t value) {
  key(name);
  body_ += std::to_string(value);
  return *this;
}

JsonObject& JsonObject::field(std::string_view name, double value) {
  key(name);
  if (!std::isfinite(value)) {
    body_ += "null";
    return *this;
  }
  append_general(body_, value);
  return *this;
}

JsonObject& JsonObject::field(std::string_view name, bool value) {
  key(name);
  body_ += value ? "true" : "false";
  return *this;
}

JsonObject& JsonObject::raw(std::string_view name, std::string_view json) {
  key(name);
  body_ += json;
  return *this;
}

JsonArray& JsonArray::add_raw(std::string_view json) {
  if (body_.size() > 1) {
    body_ += ',';
  }
  body_ += json;
  return *this;
}

}  // namespace tcptune::telemetry
