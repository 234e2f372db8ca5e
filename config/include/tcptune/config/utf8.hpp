// One UTF-8 character read strictly (RFC 3629): no overlong forms, surrogates or code points
// past U+10FFFF. Shared by the policy's input guard and the records' JSON strings.
#pragma once

#include <cstddef>
#include <string_view>

namespace tcptune::config {

struct Utf8Character {
  std::size_t length = 0;  // 0: the byte at the position starts no valid character
  char32_t code = 0;
};

constexpr Utf8Character utf8_character_at(std::string_view text, std::size_t pos) {
  const auto lead = static_cast<unsigned char>(text[pos]);
  if (lead < 0x80U) {
    return {1, lead};
  }
  std::size_t length = 0;
  char32_t code = 0;
  char32_t smallest = 0;
  if ((lead & 0xE0U) == 0xC0U) {
    length = 2, code = lead & 0x1FU, smallest = 0x80;
  } else if ((lead & 0xF0U) == 0xE0U) {
    length = 3, code = lead & 0x0FU, smallest = 0x800;
  } else if ((lead & 0xF8U) == 0xF0U) {
    length = 4, code = lead & 0x07U, smallest = 0x10000;
  }
  if (length == 0 || pos + length > text.size()) {
    return {};
  }
  for (std::size_t i = 1; i < length; ++i) {
    const auto next = static_cast<unsigned char>(text[pos + i]);
    if ((next & 0xC0U) != 0x80U) {
      return {};
    }
    code = (code << 6U) | (next & 0x3FU);
  }
  if (code < smallest || code > 0x10FFFF || (code >= 0xD800 && code <= 0xDFFF)) {
    return {};
  }
  return {length, code};
}

}  // namespace tcptune::config
