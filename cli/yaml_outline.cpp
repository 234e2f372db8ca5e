#include "yaml_outline.hpp"

#include <yaml.h>

#include <algorithm>
#include <cctype>
#include <memory>
#include <set>

namespace tcptune::cli {

namespace {

// libyaml's marks count characters (a CRLF counts two); the edits need bytes.
class CharacterOffsets {
 public:
  CharacterOffsets(std::string_view text, std::size_t base) : base_(base) {
    ascii_ = std::none_of(text.begin() + static_cast<std::ptrdiff_t>(base), text.end(),
                          [](char c) { return static_cast<unsigned char>(c) >= 0x80; });
    if (!ascii_) {
      for (std::size_t i = base; i < text.size(); ++i) {
        if ((static_cast<unsigned char>(text[i]) & 0xC0) != 0x80) {  // not a continuation byte
          offsets_.push_back(i);
        }
      }
      offsets_.push_back(text.size());
    }
  }
  std::size_t byte(std::size_t index) const {
    if (ascii_) {
      return base_ + index;
    }
    return offsets_.at(std::min(index, offsets_.size() - 1));
  }

 private:
  std::size_t base_;
  bool ascii_ = true;
  std::vector<std::size_t> offsets_;
};

struct ParserDeleter {
  void operator()(yaml_parser_t* parser) const {
    yaml_parser_delete(parser);
    delete parser;
  }
};

struct Event {
  yaml_event_t event{};
  ~Event() { yaml_event_delete(&event); }
};

// No manifest nests collections this deep; libyaml's time grows with the square of the depth
// (half a megabyte of brackets takes minutes), so a deeper stream is refused as it is read.
constexpr std::size_t kDeepestNesting = 1000;

YamlNode::Style scalar_style(yaml_scalar_style_t style) {
  switch (style) {
    case YAML_SINGLE_QUOTED_SCALAR_STYLE: return YamlNode::Style::single_quoted;
    case YAML_DOUBLE_QUOTED_SCALAR_STYLE: return YamlNode::Style::double_quoted;
    case YAML_LITERAL_SCALAR_STYLE: return YamlNode::Style::literal;
    case YAML_FOLDED_SCALAR_STYLE: return YamlNode::Style::folded;
    default: return YamlNode::Style::plain;
  }
}

bool is_blank(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

// An anchor's name, as libyaml reads it: letters, digits, '-' and '_' (what follows is the
// node's text, even without a blank between: "&a:b" is the scalar ":b" anchored "a").
bool is_anchor_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '-' || c == '_';
}

// A shorthand tag's characters, as libyaml reads them ("!x!y", "!!str"): a URI's, less the flow
// indicators ",[]" that a verbatim tag "!<...>" may hold.
bool is_tag_char(char c) {
  return is_anchor_char(c) || std::string_view(";/?:@&=+$.%!~*'()").find(c) != std::string_view::npos;
}

// Where a node's own text starts: past its properties (a tag "!x", an anchor "&x") and the
// blanks, line ends and comments after each, which may put it on a later line ("env: !!seq",
// the items below). Never past `limit`, the node's end (a tagged empty scalar has no text).
std::size_t past_properties(std::string_view text, std::size_t start, std::size_t limit) {
  std::size_t at = start;
  while (at < text.size() && (text[at] == '!' || text[at] == '&')) {
    if (text[at] == '&') {
      for (++at; at < text.size() && is_anchor_char(text[at]); ++at) {
      }
    } else if (text.substr(at, 2) == "!<") {
      const std::size_t close = text.find('>', at);
      at = close == std::string_view::npos ? text.size() : close + 1;
    } else {
      for (++at; at < text.size() && is_tag_char(text[at]); ++at) {
      }
    }
    for (;;) {
      while (at < text.size() && is_blank(text[at])) {
        ++at;
      }
      if (at >= text.size() || text[at] != '#') {
        break;
      }
      at = text.find('\n', at);
      at = at == std::string_view::npos ? text.size() : at;
    }
  }
  return std::min(at, limit);
}

const yaml_char_t* tag_of(const yaml_event_t& e) {
  switch (e.type) {
    case YAML_SCALAR_EVENT: return e.data.scalar.tag;
    case YAML_SEQUENCE_START_EVENT: return e.data.sequence_start.tag;
    case YAML_MAPPING_START_EVENT: return e.data.mapping_start.tag;
    default: return nullptr;
  }
}

std::string describe_problem(const yaml_parser_t& parser) {
  std::string problem = parser.problem != nullptr ? parser.problem : "cannot be read as YAML";
  if (parser.context != nullptr) {
    problem += std::string(" ") + parser.context;
  }
  return problem;
}

}  // namespace

ManifestError::ManifestError(std::size_t document, std::size_t line, std::size_t column, const std::string& problem)
    : std::runtime_error("document " + std::to_string(document) + ", line " + std::to_string(line) + ", column " +
                         std::to_string(column) + ": " + problem) {}

int YamlDocument::key_of(int map, std::string_view key) const {
  if (map < 0 || node(map).kind != YamlNode::Kind::mapping) {
    return -1;
  }
  const std::vector<int>& children = node(map).children;
  for (std::size_t i = 0; i + 1 < children.size(); i += 2) {
    const YamlNode& candidate = node(children[i]);
    if (candidate.kind == YamlNode::Kind::scalar && candidate.value == key) {
      return children[i];
    }
  }
  return -1;
}

int YamlDocument::repeated_key() const {
  for (const YamlNode& map : nodes) {
    if (map.kind != YamlNode::Kind::mapping) {
      continue;
    }
    std::set<std::string_view> keys;
    for (std::size_t i = 0; i + 1 < map.children.size(); i += 2) {
      const YamlNode& key = node(map.children[i]);
      if (key.kind == YamlNode::Kind::scalar && !keys.insert(key.value).second) {
        return map.children[i];
      }
    }
  }
  return -1;
}

int YamlDocument::collection_key() const {
  for (const YamlNode& map : nodes) {
    if (map.kind != YamlNode::Kind::mapping) {
      continue;
    }
    for (std::size_t i = 0; i + 1 < map.children.size(); i += 2) {
      const YamlNode::Kind kind = node(map.children[i]).kind;
      if (kind == YamlNode::Kind::mapping || kind == YamlNode::Kind::sequence) {
        return map.children[i];
      }
    }
  }
  return -1;
}

int YamlDocument::value_of(int map, std::string_view key) const {
  const int found = key_of(map, key);
  if (found < 0) {
    return -1;
  }
  const std::vector<int>& children = node(map).children;
  const auto at = std::find(children.begin(), children.end(), found);
  return *(at + 1);
}

std::string YamlDocument::scalar(int index) const {
  if (index < 0 || node(index).kind != YamlNode::Kind::scalar) {
    return {};
  }
  return node(index).value;
}

namespace {

// YAML ends a line at a carriage return alone as at "\n" or "\r\n", and the edits, which count
// lines by "\n", would then take the next line for the end of this one: such a stream is refused,
// at the first one, named as libyaml numbers lines.
void refuse_lone_carriage_return(std::string_view text, std::size_t base, const std::vector<YamlDocument>& documents) {
  std::size_t line = 1;
  std::size_t line_start = base;
  for (std::size_t i = base; i < text.size(); ++i) {
    if (text[i] == '\n' || (text[i] == '\r' && i + 1 < text.size() && text[i + 1] == '\n')) {
      i += text[i] == '\r' ? 1 : 0;
      ++line;
      line_start = i + 1;
    } else if (text[i] == '\r') {
      std::size_t document = documents.empty() ? 1 : documents.front().number;
      for (const YamlDocument& candidate : documents) {
        if (candidate.root >= 0 && candidate.node(candidate.root).start <= i) {
          document = candidate.number;
        }
      }
      throw ManifestError(document, line, i - line_start + 1,
                          "a line ends in a carriage return alone (an old Mac line end), which edits made by "
                          "lines would misplace; convert the line ends first (tr '\\r' '\\n')");
    }
  }
}

}  // namespace

std::vector<YamlDocument> read_yaml_outline(std::string_view text) {
  const auto bytes = [&](std::size_t count) { return text.substr(0, std::min(count, text.size())); };
  if (bytes(2) == "\xFE\xFF" || bytes(2) == "\xFF\xFE") {
    throw ManifestError(1, 1, 1, "UTF-16 text; only UTF-8 manifests are read");
  }
  // A UTF-8 BOM is not given to libyaml: told the encoding, it skips the mark as a character of
  // the first line, whose keys then sit one column right of the next line's.
  const std::size_t base = bytes(3) == "\xEF\xBB\xBF" ? 3 : 0;
  const CharacterOffsets offsets(text, base);

  std::unique_ptr<yaml_parser_t, ParserDeleter> parser(new yaml_parser_t{});
  if (yaml_parser_initialize(parser.get()) == 0) {
    throw std::bad_alloc();
  }
  // libyaml asserts a non-null input, which an empty string_view need not have.
  const char* const input = text.data() != nullptr ? text.data() + base : "";
  yaml_parser_set_input_string(parser.get(), reinterpret_cast<const unsigned char*>(input), text.size() - base);
  yaml_parser_set_encoding(parser.get(), YAML_UTF8_ENCODING);

  std::vector<YamlDocument> documents;
  std::vector<int> open;  // collections not yet closed, innermost last
  bool in_document = false;
  for (;;) {
    Event event;
    if (yaml_parser_parse(parser.get(), &event.event) == 0) {
      const yaml_mark_t& mark = parser->problem_mark;
      throw ManifestError(documents.size() + (in_document ? 0 : 1), mark.line + 1, mark.column + 1,
                          describe_problem(*parser));
    }
    const yaml_event_t& e = event.event;
    if (e.type == YAML_STREAM_END_EVENT) {
      break;
    }
    if (e.type == YAML_DOCUMENT_START_EVENT) {
      documents.emplace_back();
      documents.back().number = documents.size();
      in_document = true;
      continue;
    }
    if (e.type == YAML_DOCUMENT_END_EVENT) {
      in_document = false;
      continue;
    }
    if (!in_document) {
      continue;  // STREAM-START
    }
    YamlDocument& document = documents.back();
    if (e.type == YAML_SEQUENCE_END_EVENT || e.type == YAML_MAPPING_END_EVENT) {
      YamlNode& closed = document.nodes.at(static_cast<std::size_t>(open.back()));
      if (closed.style == YamlNode::Style::flow) {
        closed.end = offsets.byte(e.end_mark.index);
      }
      open.pop_back();
      if (!open.empty()) {
        YamlNode& parent = document.nodes.at(static_cast<std::size_t>(open.back()));
        parent.end = std::max(parent.end, closed.end);
      }
      continue;
    }
    YamlNode node;
    node.start = offsets.byte(e.start_mark.index);
    node.end = node.start;
    node.line = e.start_mark.line + 1;
    node.column = e.start_mark.column + 1;
    bool opens = false;
    switch (e.type) {
      case YAML_SCALAR_EVENT:
        node.kind = YamlNode::Kind::scalar;
        node.style = scalar_style(e.data.scalar.style);
        node.value.assign(reinterpret_cast<const char*>(e.data.scalar.value), e.data.scalar.length);
        node.end = offsets.byte(e.end_mark.index);
        break;
      case YAML_ALIAS_EVENT:
        node.kind = YamlNode::Kind::alias;
        node.end = offsets.byte(e.end_mark.index);
        document.has_alias = true;
        break;
      case YAML_SEQUENCE_START_EVENT:
        node.kind = YamlNode::Kind::sequence;
        node.style =
            e.data.sequence_start.style == YAML_FLOW_SEQUENCE_STYLE ? YamlNode::Style::flow : YamlNode::Style::block;
        opens = true;
        break;
      case YAML_MAPPING_START_EVENT:
        node.kind = YamlNode::Kind::mapping;
        node.style =
            e.data.mapping_start.style == YAML_FLOW_MAPPING_STYLE ? YamlNode::Style::flow : YamlNode::Style::block;
        opens = true;
        break;
      default: continue;
    }
    node.content = past_properties(text, node.start, opens ? text.size() : node.end);
    if (const yaml_char_t* tag = tag_of(e); tag != nullptr) {
      node.tag = reinterpret_cast<const char*>(tag);
    }
    const int index = static_cast<int>(document.nodes.size());
    document.nodes.push_back(std::move(node));
    if (open.empty()) {
      document.root = index;
    } else {
      YamlNode& parent = document.nodes.at(static_cast<std::size_t>(open.back()));
      parent.children.push_back(index);
      parent.end = std::max(parent.end, document.nodes.back().end);
    }
    if (opens) {
      open.push_back(index);
      if (open.size() > kDeepestNesting) {
        throw ManifestError(document, document.nodes.back(),
                            "collections nested more than " + std::to_string(kDeepestNesting) + " deep");
      }
    }
  }
  refuse_lone_carriage_return(text, base, documents);
  return documents;
}

}  // namespace tcptune::cli
