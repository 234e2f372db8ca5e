// A YAML stream as an outline of nodes with the byte positions of their text, read with libyaml's
// event API. kube-inject edits manifests as text at these positions rather than re-serialising
// them, so comments, quoting, key order and layout outside its edits stay byte for byte.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace tcptune::cli {

struct YamlNode {
  enum class Kind { scalar, sequence, mapping, alias };
  enum class Style { plain, single_quoted, double_quoted, literal, folded, block, flow };
  Kind kind = Kind::scalar;
  Style style = Style::plain;  // scalars: their quoting; collections: block or flow
  std::string value;           // a scalar's value
  std::size_t start = 0;       // byte offset of the first character, its tag or anchor if it has one
  // Byte offset of the node's own text, past its tag and anchor and the blanks, line ends and
  // comments after them: a quote, a bracket, a block sequence's first '-'. `start` without them.
  std::size_t content = 0;
  std::string tag;  // an explicit tag as libyaml resolves it ("!!str" is "tag:yaml.org,2002:str"), or empty
  // Byte offset just past the last character of the node's own text: a scalar's end, a flow
  // collection's closing bracket; for a block collection, the end of the last such thing in it
  // (libyaml's own end mark of a block collection lies at the next token, past comments).
  std::size_t end = 0;
  std::size_t line = 0;       // 1-based, of start
  std::size_t column = 0;     // 1-based, in characters
  std::vector<int> children;  // sequence items; a mapping's keys and values, alternating
};

struct YamlDocument {
  std::size_t number = 0;  // 1-based position in the stream
  std::vector<YamlNode> nodes;
  int root = -1;  // -1: an empty document
  bool has_alias = false;

  const YamlNode& node(int index) const { return nodes.at(static_cast<std::size_t>(index)); }
  // The value of `key` in mapping `map`, or -1 (also when `map` is -1 or not a mapping).
  int value_of(int map, std::string_view key) const;
  // The key node of `key` in mapping `map`, or -1.
  int key_of(int map, std::string_view key) const;
  // A scalar value as a string, or empty when `index` is -1 or not a scalar.
  std::string scalar(int index) const;
  // The second of two equal scalar keys in one mapping (the first such pair in document order),
  // or -1. Which of the two counts is up to the reader, so an edit cannot rely on either.
  int repeated_key() const;
  // The first key that is a collection (`{a: b}: c`, `? [x]`), or -1.
  int collection_key() const;
};

// A manifest the transform cannot read or will not edit: where, and why, for one line on stderr.
class ManifestError : public std::runtime_error {
 public:
  ManifestError(std::size_t document, std::size_t line, std::size_t column, const std::string& problem);
  ManifestError(const YamlDocument& document, const YamlNode& node, const std::string& problem)
      : ManifestError(document.number, node.line, node.column, problem) {}
};

// The documents of a UTF-8 YAML stream. Throws ManifestError on a syntax error, or on UTF-16/32
// input (libyaml would decode it, and its positions would no longer be the text's bytes).
// Collections nested more than 1000 deep are refused too (libyaml would take minutes).
std::vector<YamlDocument> read_yaml_outline(std::string_view text);

}  // namespace tcptune::cli
