#include "json_value.hpp"

#include <cstdlib>

namespace tcptune::cli {

const JsonValue* JsonValue::get(std::string_view key) const {
  const auto* object = std::get_if<Object>(&value_);
  if (object == nullptr) {
    return nullptr;
  }
  const auto found = object->find(key);
  return found == object->end() ? nullptr : &found->second;
}

double JsonValue::number_or(double fallback) const {
  const auto* number = std::get_if<double>(&value_);
  return number != nullptr ? *number : fallback;
}

std::string JsonValue::string_or(std::string fallback) const {
  if (const auto* text = std::get_if<std::string>(&value_)) {
    return *text;
  }
  return fallback;
}

bool JsonValue::bool_or(bool fallback) const {
  const auto* flag = std::get_if<bool>(&value_);
  return flag != nullptr ? *flag : fallback;
}

const JsonValue::Array& JsonValue::array() const {
  static const Array no_items;
  const auto* array = std::get_if<Array>(&value_);
  return array != nullptr ? *array : no_items;
}

double JsonValue::number(std::string_view key, double fallback) const {
  const JsonValue* member = get(key);
  return member != nullptr ? member->number_or(fallback) : fallback;
}

std::string JsonValue::string(std::string_view key, std::string fallback) const {
  const JsonValue* member = get(key);
  return member != nullptr ? member->string_or(std::move(fallback)) : fallback;
}

namespace {

class Parser {
 public:
  explicit Parser(std::string_view text) : text_(text) {}

  std::optional<JsonValue> document(std::string& error) {
    auto value = parse_value();
    skip_space();
    if (value && position_ != text_.size()) {
      fail("unexpected text after the value");
      value.reset();
    }
    if (!value) {
      error = error_ + " at offset " + std::to_string(position_);
    }
    return value;
  }

 private:
  static constexpr int kMaxDepth = 64;

  void fail(const std::string& message) {
    if (error_.empty()) {
      error_ = message;
    }
  }
  void skip_space() {
    while (position_ < text_.size() && (text_[position_] == ' ' || text_[position_] == '\t' ||
                                        text_[position_] == '\n' || text_[position_] == '\r')) {
      ++position_;
    }
  }
  bool take(char c) {
    skip_space();
    if (position_ < text_.size() && text_[position_] == c) {
      ++position_;
      return true;
    }
    return false;
  }
  bool take_word(std::string_view word) {
    if (text_.substr(position_, word.size()) == word) {
      position_ += word.size();
      return true;
    }
    return false;
  }

  std::optional<JsonValue> parse_value() {
    if (++depth_ > kMaxDepth) {
      fail("nested too deeply");
      return std::nullopt;
    }
    skip_space();
    std::optional<JsonValue> value;
    if (position_ >= text_.size()) {
      fail("unexpected end");
    } else if (text_[position_] == '{') {
      value = parse_object();
    } else if (text_[position_] == '[') {
      value = parse_array();
    } else if (text_[position_] == '"') {
      if (auto text = parse_string()) {
        value = JsonValue(std::move(*text));
      }
    } else if (take_word("true")) {
      value = JsonValue(true);
    } else if (take_word("false")) {
      value = JsonValue(false);
    } else if (take_word("null")) {
      value = JsonValue();
    } else {
      value = parse_number();
    }
    --depth_;
    return value;
  }

  std::optional<JsonValue> parse_number() {
    const std::size_t start = position_;
    while (position_ < text_.size() &&
           std::string_view("+-0123456789.eE").find(text_[position_]) != std::string_view::npos) {
      ++position_;
    }
    const std::string digits(text_.substr(start, position_ - start));
    char* end = nullptr;
    const double number = std::strtod(digits.c_str(), &end);
    if (digits.empty() || end != digits.c_str() + digits.size()) {
      fail("not a JSON value");
      return std::nullopt;
    }
    return JsonValue(number);
  }

  std::optional<std::string> parse_string() {
    ++position_;  // the opening quote
    std::string out;
    while (position_ < text_.size()) {
      const char c = text_[position_++];
      if (c == '"') {
        return out;
      }
      if (static_cast<unsigned char>(c) < 0x20) {
        fail("control character in a string");
        return std::nullopt;
      }
      if (c != '\\') {
        out += c;
        continue;
      }
      if (position_ >= text_.size()) {
        break;
      }
      const char escaped = text_[position_++];
      switch (escaped) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
          if (position_ + 4 > text_.size()) {
            fail("short \\u escape");
            return std::nullopt;
          }
          const auto code = std::strtoul(std::string(text_.substr(position_, 4)).c_str(), nullptr, 16);
          position_ += 4;
          // UTF-8 for the basic plane (the records escape only control characters).
          if (code < 0x80) {
            out += static_cast<char>(code);
          } else if (code < 0x800) {
            out += static_cast<char>(0xC0 | (code >> 6));
            out += static_cast<char>(0x80 | (code & 0x3F));
          } else {
            out += static_cast<char>(0xE0 | (code >> 12));
            out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
            out += static_cast<char>(0x80 | (code & 0x3F));
          }
          break;
        }
        default: fail("bad escape in a string"); return std::nullopt;
      }
    }
    fail("unterminated string");
    return std::nullopt;
  }

  std::optional<JsonValue> parse_array() {
    ++position_;
    JsonValue::Array items;
    if (take(']')) {
      return std::optional<JsonValue>(std::in_place, std::move(items));
    }
    do {
      auto item = parse_value();
      if (!item) {
        return std::nullopt;
      }
      items.push_back(std::move(*item));
    } while (take(','));
    if (!take(']')) {
      fail("expected ',' or ']'");
      return std::nullopt;
    }
    return std::optional<JsonValue>(std::in_place, std::move(items));
  }

  std::optional<JsonValue> parse_object() {
    ++position_;
    JsonValue::Object members;
    if (take('}')) {
      return std::optional<JsonValue>(std::in_place, std::move(members));
    }
    do {
      skip_space();
      if (position_ >= text_.size() || text_[position_] != '"') {
        fail("expected a member name");
        return std::nullopt;
      }
      auto key = parse_string();
      if (!key || !take(':')) {
        fail("expected ':'");
        return std::nullopt;
      }
      auto value = parse_value();
      if (!value) {
        return std::nullopt;
      }
      members.insert_or_assign(std::move(*key), std::move(*value));
    } while (take(','));
    if (!take('}')) {
      fail("expected ',' or '}'");
      return std::nullopt;
    }
    return std::optional<JsonValue>(std::in_place, std::move(members));
  }

  std::string_view text_;
  std::size_t position_ = 0;
  int depth_ = 0;
  std::string error_;
};

}  // namespace

std::optional<JsonValue> parse_json(std::string_view text, std::string& error) {
  return Parser(text).document(error);
}

}  // namespace tcptune::cli
