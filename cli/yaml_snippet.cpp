#include "yaml_snippet.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <regex>
#include <string_view>

namespace tcptune::cli {

namespace {

// Words YAML 1.1 reads as booleans or null, and anything number-like, must be quoted to stay strings.
bool reads_as_other_type(const std::string& text) {
  static constexpr std::array<std::string_view, 12> kWords{"true", "false", "yes",  "no", "on", "off",
                                                           "y",    "n",     "null", "~",  "",   "="};
  std::string lower(text);
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  if (std::find(kWords.begin(), kWords.end(), lower) != kWords.end()) {
    return true;
  }
  static const std::regex number_like(R"([-+]?(\.?[0-9][0-9_.:eE+-]*|0x[0-9a-fA-F_]+|\.inf|\.nan))", std::regex::icase);
  return std::regex_match(text, number_like);
}

bool plain_is_safe(const std::string& text) {
  if (text.empty() || reads_as_other_type(text) || text.back() == ':') {
    return false;
  }
  for (const char c : text) {
    if (std::isalnum(static_cast<unsigned char>(c)) == 0 &&
        std::string_view("/._:=-+@").find(c) == std::string_view::npos) {
      return false;
    }
  }
  // '-' starts a plain scalar only when a non-space follows; ':' must not look like a key's end.
  return text.front() != ':' && text.find(": ") == std::string::npos && !(text.front() == '-' && text.size() == 1);
}

bool is_collection(const Snippet& value) {
  return value.is_object() || value.is_array();
}

std::string spaces(std::size_t count) {
  return std::string(count, ' ');
}

void block_mapping(const Snippet& map, std::size_t column, const std::string& first_prefix, const BlockLayout& layout,
                   std::string& out);

// What follows "KEY:" — a scalar or empty collection on the same line, else lines below.
void block_value(const Snippet& value, std::size_t key_column, const BlockLayout& layout, std::string& out) {
  if (!is_collection(value) || value.empty()) {
    out += " " + (is_collection(value) ? yaml_flow(value) : yaml_scalar(value)) + layout.newline;
    return;
  }
  out += layout.newline;
  if (value.is_object()) {
    block_mapping(value, key_column + 2, spaces(key_column + 2), layout, out);
    return;
  }
  for (const Snippet& item : value) {
    out += yaml_block_item(item, key_column + layout.sequence_offset, layout);
  }
}

void block_mapping(const Snippet& map, std::size_t column, const std::string& first_prefix, const BlockLayout& layout,
                   std::string& out) {
  bool first = true;
  for (const auto& [key, value] : map.items()) {
    out += (first ? first_prefix : spaces(column)) + yaml_scalar(key) + ":";
    block_value(value, column, layout, out);
    first = false;
  }
}

}  // namespace

std::string yaml_scalar(const Snippet& value) {
  if (value.is_string()) {
    const std::string& text = value.get_ref<const std::string&>();
    return plain_is_safe(text) ? text : Snippet(text).dump();  // JSON's escapes are YAML's
  }
  return value.dump();  // numbers, booleans, null
}

std::string yaml_flow(const Snippet& value) {
  if (value.is_object()) {
    std::string out = "{";
    for (const auto& [key, item] : value.items()) {
      out += (out.size() > 1 ? ", " : "") + Snippet(key).dump() + ": " + yaml_flow(item);
    }
    return out + "}";
  }
  if (value.is_array()) {
    std::string out = "[";
    for (const Snippet& item : value) {
      out += (out.size() > 1 ? ", " : "") + yaml_flow(item);
    }
    return out + "]";
  }
  return value.dump();
}

std::string yaml_block_item(const Snippet& item, std::size_t column, const BlockLayout& layout) {
  std::string out;
  if (item.is_object() && !item.empty()) {
    block_mapping(item, column + 2, spaces(column) + "- ", layout, out);
  } else {
    out += spaces(column) + "- " + (is_collection(item) ? yaml_flow(item) : yaml_scalar(item)) + layout.newline;
  }
  return out;
}

std::string yaml_block_entry(const std::string& key, const Snippet& value, std::size_t column,
                             const BlockLayout& layout) {
  std::string out = spaces(column) + yaml_scalar(key) + ":";
  block_value(value, column, layout, out);
  return out;
}

}  // namespace tcptune::cli
