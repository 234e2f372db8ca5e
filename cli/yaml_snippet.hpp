// The YAML text of what kube-inject adds to a manifest: block style, as kubectl and helm write
// it, or flow style for insertion into a flow collection ([...], {...}).
#pragma once

#include <nlohmann/json.hpp>

#include <string>

namespace tcptune::cli {

using Snippet = nlohmann::ordered_json;

struct BlockLayout {
  std::string newline = "\n";  // the document's own line ends
  // Columns of a block sequence's '-' to the right of its key: 0 as kubectl writes
  // ("containers:\n- name"), 2 as most charts do.
  std::size_t sequence_offset = 0;
};

// A scalar as YAML text: plain where that reads back as the same string, else double-quoted.
std::string yaml_scalar(const Snippet& value);
// `value` as one flow-style text, e.g. {"name": "tcptune", "emptyDir": {}}.
std::string yaml_flow(const Snippet& value);
// "- ITEM" lines of a block sequence item whose '-' is at `column`.
std::string yaml_block_item(const Snippet& item, std::size_t column, const BlockLayout& layout);
// "KEY: VALUE" lines of a block mapping entry whose key is at `column`.
std::string yaml_block_entry(const std::string& key, const Snippet& value, std::size_t column,
                             const BlockLayout& layout);

}  // namespace tcptune::cli
