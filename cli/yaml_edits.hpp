// Text edits that add an item or an entry to a YAML collection, or take one out, in the
// collection's own style: lines for block collections, text after the bracket for flow ones.
// Removing what was inserted gives back the original bytes.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "text_edits.hpp"
#include "yaml_outline.hpp"
#include "yaml_snippet.hpp"

namespace tcptune::cli {

class YamlEditor {
 public:
  YamlEditor(std::string_view text, const YamlDocument& document, BlockLayout layout)
      : text_(text), document_(document), layout_(std::move(layout)) {}

  const YamlDocument& document() const { return document_; }
  const BlockLayout& layout() const { return layout_; }
  // `items` before the first item of sequence `sequence`.
  TextEdit insert_first_items(int sequence, const std::vector<Snippet>& items) const;
  // `key: value` in mapping `mapping`: before the entry of `before` when that key starts its own
  // line, else before the first key that does (and above the comment lines just over it).
  TextEdit insert_entry(int mapping, const std::string& key, const Snippet& value, std::string_view before = {}) const;
  // Items [first, first + count) of `sequence`, out.
  TextEdit remove_items(int sequence, std::size_t first, std::size_t count) const;
  // The entry of `key` (a key node of `mapping`), out.
  TextEdit remove_entry(int mapping, int key) const;
  // Text inserted at the start of a scalar's value (after its opening quote).
  TextEdit prefix_scalar(int scalar, const std::string& prefix) const;
  // The inverse of prefix_scalar; false when the scalar's text does not start with `prefix`.
  bool unprefix_scalar(int scalar, const std::string& prefix, TextEdit& edit) const;

 private:
  std::size_t line_start(std::size_t position) const;
  // Just past the line end of the line holding `position`, or `position` itself at a line start
  // (a block scalar's end is the start of the line after it).
  std::size_t through_line_end(std::size_t position) const;
  bool starts_line(const YamlNode& node) const;
  bool starts_line_at(std::size_t position) const;
  std::size_t after_bracket(const YamlNode& node) const;
  bool starts_as_styled(const YamlNode& node) const;
  std::size_t dash_of(const YamlNode& item) const;
  std::size_t above_comments(std::size_t line, std::size_t column) const;

  std::string_view text_;
  const YamlDocument& document_;
  BlockLayout layout_;
};

}  // namespace tcptune::cli
