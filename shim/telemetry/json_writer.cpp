#include "json_writer.hpp"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "tcptune/config/utf8.hpp"

namespace tcptune::telemetry {

namespace {

// Whether any of the 8 bytes in `word` needs escaping: a control character (below 0x20), not
// ASCII (0x80 and up: checked as UTF-8), '"' or '\\'. Eight bytes at a time, since most of a
// record's strings (its keys, names, addresses) need none.
bool any_byte_to_escape(std::uint64_t word) noexcept {
  constexpr std::uint64_t kOnes = 0x0101010101010101ULL;
  constexpr std::uint64_t kHighs = 0x8080808080808080ULL;
  const auto zero_byte = [](std::uint64_t bytes) { return (bytes - kOnes) & ~bytes & kHighs; };
  const std::uint64_t below_space = (word - kOnes * 0x20) & ~word & kHighs;  // exact for bytes below 0x80
  return ((word & kHighs) | below_space | zero_byte(word ^ (kOnes * '"')) | zero_byte(word ^ (kOnes * '\\'))) != 0;
}

// How many bytes at the start of `text` need no escaping, eight at a time (then byte by byte).
std::size_t plain_prefix(std::string_view text) noexcept {
  std::size_t pos = 0;
  for (; pos + sizeof(std::uint64_t) <= text.size(); pos += sizeof(std::uint64_t)) {
    std::uint64_t word = 0;
    std::memcpy(&word, text.data() + pos, sizeof word);
    if (any_byte_to_escape(word)) {
      break;
    }
  }
  return pos;
}

}  // namespace

// A byte that starts no valid UTF-8 character (a program named by raw bytes) becomes U+FFFD,
// so that the line stays JSON that every reader accepts.
void append_json_string(std::string& out, std::string_view text) {
  out += '"';
  std::size_t plain = 0;  // where the printable ASCII not yet appended starts: appended a run at a time
  for (std::size_t pos = plain_prefix(text); pos < text.size();) {
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

template <typename Integer>
void append_integer(std::string& out, Integer value) {
  char digits[24];  // 20 digits and a sign at most
  const std::to_chars_result end = std::to_chars(std::begin(digits), std::end(digits), value);
  out.append(digits, end.ptr);
}
template void append_integer(std::string& out, std::int64_t value);
template void append_integer(std::string& out, std::uint64_t value);

void append_general(std::string& out, double value) {
  // A whole number below a million, which "%.6g" writes as an integer (most of a record's: the
  // counts, the zeros of an empty histogram), without printf; -0 keeps its sign there.
  if (value > -1e6 && value < 1e6 && value == static_cast<double>(static_cast<std::int64_t>(value)) &&
      !(value == 0 && std::signbit(value))) {
    append_integer(out, static_cast<std::int64_t>(value));
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
  append_integer(body_, value);
  return *this;
}

JsonObject& JsonObject::field(std::string_view name, std::uint64_t value) {
  key(name);
  append_integer(body_, value);
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
