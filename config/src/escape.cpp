#include "tcptune/config/escape.hpp"

namespace tcptune::config {

std::string escape_for_display(std::string_view text, bool escape_non_ascii) {
  std::string out;
  for (const char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7f || (c >= 0x80 && escape_non_ascii)) {
      constexpr char kDigits[] = "0123456789abcdef";
      out += std::string("\\x") + kDigits[c >> 4] + kDigits[c & 0xf];
    } else {
      out += ch;
    }
  }
  return out;
}

}  // namespace tcptune::config
