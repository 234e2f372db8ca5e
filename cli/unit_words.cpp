#include "unit_words.hpp"

#include <cstdint>
#include <optional>

namespace tcptune::cli {

namespace {

constexpr std::string_view kSeparators = " \t\n\r";

bool is_separator(char c) {
  return kSeparators.find(c) != std::string_view::npos;
}

int hex_digit(char c) {
  if (c >= '0' && c <= '9') {
    return c - '0';
  }
  if (c >= 'a' && c <= 'f') {
    return c - 'a' + 10;
  }
  if (c >= 'A' && c <= 'F') {
    return c - 'A' + 10;
  }
  return -1;
}

void append_utf8(std::string& out, std::uint32_t code) {
  if (code < 0x80) {
    out += static_cast<char>(code);
  } else if (code < 0x800) {
    out += static_cast<char>(0xC0 | (code >> 6));
    out += static_cast<char>(0x80 | (code & 0x3F));
  } else if (code < 0x10000) {
    out += static_cast<char>(0xE0 | (code >> 12));
    out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (code & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (code >> 18));
    out += static_cast<char>(0x80 | ((code >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (code & 0x3F));
  }
}

// systemd's cunescape_one: the escape after a backslash at `at`; how many characters it took
// (0: not an escape systemd knows). NUL is refused, as systemd does.
std::size_t unescape_one(std::string_view text, std::size_t at, std::string& out) {
  const char c = text[at];
  switch (c) {
    case 'a': out += '\a'; return 1;
    case 'b': out += '\b'; return 1;
    case 'f': out += '\f'; return 1;
    case 'n': out += '\n'; return 1;
    case 'r': out += '\r'; return 1;
    case 't': out += '\t'; return 1;
    case 'v': out += '\v'; return 1;
    case '\\': out += '\\'; return 1;
    case '"': out += '"'; return 1;
    case '\'': out += '\''; return 1;
    case 's': out += ' '; return 1;
    default: break;
  }
  if (c == 'x' || c == 'u' || c == 'U') {
    const std::size_t digits = c == 'x' ? 2 : (c == 'u' ? 4 : 8);
    if (at + digits >= text.size()) {
      return 0;
    }
    std::uint32_t code = 0;
    for (std::size_t i = 1; i <= digits; ++i) {
      const int digit = hex_digit(text[at + i]);
      if (digit < 0) {
        return 0;
      }
      code = code * 16 + static_cast<std::uint32_t>(digit);
    }
    if (code == 0 || code > 0x10FFFF) {
      return 0;
    }
    if (c == 'x') {
      out += static_cast<char>(code);  // a byte, not a character
    } else {
      append_utf8(out, code);
    }
    return digits + 1;
  }
  if (c >= '0' && c <= '7') {
    if (at + 2 >= text.size()) {
      return 0;
    }
    std::uint32_t code = 0;
    for (std::size_t i = 0; i < 3; ++i) {
      const char digit = text[at + i];
      if (digit < '0' || digit > '7') {
        return 0;
      }
      code = code * 8 + static_cast<std::uint32_t>(digit - '0');
    }
    if (code == 0 || code > 0xFF) {
      return 0;
    }
    out += static_cast<char>(code);
    return 3;
  }
  return 0;
}

}  // namespace

UnitWords split_unit_words(std::string_view value, bool relaxed) {
  UnitWords result;
  std::size_t at = 0;
  while (true) {
    while (at < value.size() && is_separator(value[at])) {
      ++at;
    }
    if (at >= value.size()) {
      return result;
    }
    UnitWord word;
    word.begin = at;
    char quote = 0;
    while (at < value.size() && (quote != 0 || !is_separator(value[at]))) {
      const char c = value[at];
      if (c == '\\') {
        if (at + 1 >= value.size()) {
          if (relaxed && quote == 0) {
            word.text += '\\';  // a trailing backslash is kept
            ++at;
            break;
          }
          result.error = "a backslash at the end";
          return result;
        }
        const std::size_t taken = unescape_one(value, at + 1, word.text);
        if (taken == 0) {
          if (!relaxed) {
            result.error = std::string("unknown escape \\") + value[at + 1];
            return result;
          }
          word.text += '\\';
          word.text += value[at + 1];
          at += 2;
        } else {
          at += 1 + taken;
        }
        continue;
      }
      if (quote != 0) {
        if (c == quote) {
          quote = 0;
        } else {
          word.text += c;
        }
      } else if (c == '\'' || c == '"') {
        quote = c;
      } else {
        word.text += c;
      }
      ++at;
    }
    if (quote != 0) {
      result.error = "unbalanced quotes";
      return result;
    }
    word.end = at;
    result.words.push_back(std::move(word));
  }
}

std::string quote_unit_word(std::string_view text, bool literal_percent, bool literal_dollar) {
  bool needs_quotes = text.empty();
  std::string body;
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (c == '\\' || c == '"') {
      body += '\\';
      body += c;
    } else if (c == '\n') {
      body += "\\n";
    } else if (c == '\t') {
      body += "\\t";
    } else if (byte < 0x20 || byte == 0x7F) {
      static constexpr char kHex[] = "0123456789abcdef";
      body += "\\x";
      body += kHex[byte >> 4];
      body += kHex[byte & 0xF];
    } else if (c == '%' && literal_percent) {
      body += "%%";
    } else if (c == '$' && literal_dollar) {
      body += "$$";
    } else {
      needs_quotes = needs_quotes || c == ' ' || c == '\'' || c == ';';
      body += c;
    }
  }
  return needs_quotes || body.size() != text.size() ? "\"" + body + "\"" : body;
}

}  // namespace tcptune::cli
