#include "yaml_edits.hpp"

namespace tcptune::cli {

namespace {

bool is_blank(char c) {
  return c == ' ' || c == '\t';
}

constexpr std::string_view kCoreTagPrefix = "tag:yaml.org,2002:";  // what "!!" stands for
constexpr std::string_view kStringTag = "tag:yaml.org,2002:str";

}  // namespace

std::size_t YamlEditor::line_start(std::size_t position) const {
  const std::size_t newline = text_.rfind('\n', position == 0 ? 0 : position - 1);
  return position == 0 || newline == std::string_view::npos ? 0 : newline + 1;
}

std::size_t YamlEditor::through_line_end(std::size_t position) const {
  if (position > 0 && text_[position - 1] == '\n') {
    return position;
  }
  const std::size_t newline = text_.find('\n', position);
  return newline == std::string_view::npos ? text_.size() : newline + 1;
}

bool YamlEditor::starts_line_at(std::size_t position) const {
  for (std::size_t i = line_start(position); i < position; ++i) {
    if (text_[i] != ' ') {
      return false;
    }
  }
  return true;
}

bool YamlEditor::starts_line(const YamlNode& node) const {
  return starts_line_at(node.start);
}

// Whether a scalar's text starts at its `content` as its style says (its quote, or for a plain
// one a character that is neither a quote nor a blank), apart from its tag or anchor: "&a:b" is
// the scalar ":b", whose text cannot take a prefix (the anchor must end at a blank or ':').
bool YamlEditor::starts_as_styled(const YamlNode& node) const {
  if (node.content >= text_.size() ||
      (node.content > node.start && !is_blank(text_[node.content - 1]) && text_[node.content - 1] != '\n')) {
    return false;
  }
  const char first = text_[node.content];
  switch (node.style) {
    case YamlNode::Style::double_quoted: return first == '"';
    case YamlNode::Style::single_quoted: return first == '\'';
    default: return first != '"' && first != '\'' && !is_blank(first) && first != '\n' && first != '\r';
  }
}

// Just past a flow collection's '[' or '{'.
std::size_t YamlEditor::after_bracket(const YamlNode& node) const {
  if (node.content >= text_.size() || (text_[node.content] != '[' && text_[node.content] != '{')) {
    throw ManifestError(document_, node,
                        "a flow collection whose opening bracket cannot be found (a mapping in a list written "
                        "without braces, [a: b], is edited only as [{a: b}])");
  }
  return node.content + 1;
}

// The '-' of a block sequence item: the first thing before its content other than white space.
std::size_t YamlEditor::dash_of(const YamlNode& item) const {
  std::size_t at = item.start;
  while (at > 0 && (is_blank(text_[at - 1]) || text_[at - 1] == '\n' || text_[at - 1] == '\r')) {
    --at;
  }
  if (at == 0 || text_[at - 1] != '-') {
    throw ManifestError(document_, item, "a sequence item whose '-' cannot be found (a comment between them?)");
  }
  return at - 1;
}

// Comment lines right above a key go with it: a new entry goes above them.
std::size_t YamlEditor::above_comments(std::size_t line, std::size_t column) const {
  while (line > 0) {
    const std::size_t previous = line_start(line - 1);
    const std::string_view text = text_.substr(previous, line - previous);
    const std::size_t first = text.find_first_not_of(' ');
    if (first != column || text[first] != '#') {
      break;
    }
    line = previous;
  }
  return line;
}

TextEdit YamlEditor::insert_first_items(int sequence, const std::vector<Snippet>& items) const {
  const YamlNode& node = document_.node(sequence);
  if (node.style == YamlNode::Style::flow) {
    std::string text;
    for (const Snippet& item : items) {
      text += (text.empty() ? "" : ", ") + yaml_flow(item);
    }
    const std::size_t inside = after_bracket(node);
    if (node.children.empty()) {
      return {inside, inside, text};
    }
    const std::size_t first = document_.node(node.children.front()).start;
    return {first, first, text + ", "};
  }
  const std::size_t dash = node.content;
  const std::size_t line = line_start(dash);
  if (text_[dash] != '-' || !starts_line_at(dash)) {
    throw ManifestError(document_, node, "a block sequence that does not start its own line");
  }
  std::string text;
  for (const Snippet& item : items) {
    text += yaml_block_item(item, dash - line, layout_);
  }
  return {line, line, text};
}

TextEdit YamlEditor::insert_entry(int mapping, const std::string& key, const Snippet& value,
                                  std::string_view before) const {
  const YamlNode& node = document_.node(mapping);
  if (node.style == YamlNode::Style::flow) {
    const std::string text = Snippet(key).dump() + ": " + yaml_flow(value);
    const std::size_t inside = after_bracket(node);
    if (node.children.empty()) {
      return {inside, inside, text};
    }
    const std::size_t first = document_.node(node.children.front()).start;
    return {first, first, text + ", "};
  }
  int anchor = -1;
  const int preferred = before.empty() ? -1 : document_.key_of(mapping, before);
  if (preferred >= 0 && starts_line(document_.node(preferred))) {
    anchor = preferred;
  }
  for (std::size_t i = 0; anchor < 0 && i < node.children.size(); i += 2) {
    if (starts_line(document_.node(node.children[i]))) {
      anchor = node.children[i];
    }
  }
  if (anchor < 0) {
    throw ManifestError(document_, node, "a mapping with no key at the start of a line, where '" + key + "' would go");
  }
  const YamlNode& at = document_.node(anchor);
  const std::size_t column = at.start - line_start(at.start);
  const std::size_t position = above_comments(line_start(at.start), column);
  return {position, position, yaml_block_entry(key, value, column, layout_)};
}

TextEdit YamlEditor::remove_items(int sequence, std::size_t first, std::size_t count) const {
  const YamlNode& node = document_.node(sequence);
  const std::size_t last = first + count - 1;
  const YamlNode& head = document_.node(node.children.at(first));
  const YamlNode& tail = document_.node(node.children.at(last));
  if (node.style == YamlNode::Style::flow) {
    if (last + 1 < node.children.size()) {
      return {head.start, document_.node(node.children[last + 1]).start, ""};
    }
    if (first > 0) {
      return {document_.node(node.children[first - 1]).end, tail.end, ""};
    }
    return {head.start, tail.end, ""};
  }
  return {line_start(dash_of(head)), through_line_end(tail.end), ""};
}

TextEdit YamlEditor::remove_entry(int mapping, int key) const {
  const YamlNode& node = document_.node(mapping);
  std::size_t at = 0;
  while (at < node.children.size() && node.children[at] != key) {
    at += 2;
  }
  const YamlNode& key_node = document_.node(key);
  const YamlNode& value = document_.node(node.children.at(at + 1));
  const bool has_next = at + 2 < node.children.size();
  if (node.style == YamlNode::Style::flow) {
    if (has_next) {
      return {key_node.start, document_.node(node.children[at + 2]).start, ""};
    }
    return {at > 0 ? document_.node(node.children[at - 1]).end : key_node.start, value.end, ""};
  }
  if (starts_line(key_node)) {
    return {line_start(key_node.start), through_line_end(std::max(value.end, key_node.end)), ""};
  }
  if (!has_next) {
    throw ManifestError(document_, key_node, "the only entry of a mapping on a '-' line cannot be taken out");
  }
  return {key_node.start, document_.node(node.children[at + 2]).start, ""};
}

TextEdit YamlEditor::prefix_scalar(int scalar, const std::string& prefix) const {
  const YamlNode& node = document_.node(scalar);
  const bool quoted = node.style == YamlNode::Style::single_quoted || node.style == YamlNode::Style::double_quoted;
  if (!quoted && node.style != YamlNode::Style::plain) {
    throw ManifestError(document_, node,
                        "a block scalar (| or >), which kube-inject does not edit; write this value on one line");
  }
  if (!node.tag.empty() && node.tag != "!" && node.tag != kStringTag) {
    const std::string shown =
        node.tag.starts_with(kCoreTagPrefix) ? "!!" + node.tag.substr(kCoreTagPrefix.size()) : node.tag;
    throw ManifestError(document_, node,
                        "a value tagged " + shown + ", which kube-inject does not edit; write it untagged");
  }
  if (!starts_as_styled(node)) {
    throw ManifestError(document_, node, "a value whose text cannot be found past its tag or anchor");
  }
  const std::size_t at = node.content + (quoted ? 1 : 0);
  return {at, at, prefix};
}

bool YamlEditor::unprefix_scalar(int scalar, const std::string& prefix, TextEdit& edit) const {
  const YamlNode& node = document_.node(scalar);
  const bool quoted = node.style == YamlNode::Style::single_quoted || node.style == YamlNode::Style::double_quoted;
  const std::size_t at = node.content + (quoted ? 1 : 0);
  if (node.kind != YamlNode::Kind::scalar || text_.substr(at, prefix.size()) != prefix ||
      node.value.rfind(prefix, 0) != 0) {
    return false;
  }
  edit = {at, at + prefix.size(), ""};
  return true;
}

}  // namespace tcptune::cli
