#include "toml_walk.hpp"

#include <algorithm>

#include "key_places.hpp"
#include "tcptune/config/did_you_mean.hpp"
#include "tcptune/config/escape.hpp"

namespace tcptune::config {

PolicyValue policy_value(const toml::node& node) {
  switch (node.type()) {
    case toml::node_type::string: return PolicyValue::of_string(*node.value<std::string>());
    case toml::node_type::integer: return PolicyValue::of_integer(*node.value<std::int64_t>());
    case toml::node_type::floating_point: return PolicyValue::of_float(*node.value<double>());
    case toml::node_type::boolean: return PolicyValue::of_bool(*node.value<bool>());
    case toml::node_type::table: return PolicyValue::of_type(PolicyValue::Type::table);
    case toml::node_type::array: return PolicyValue::of_type(PolicyValue::Type::array);
    default: return PolicyValue::of_type(PolicyValue::Type::date_time);
  }
}

SourcePos TomlWalk::position(const toml::source_region& region) const {
  return SourcePos{source_, static_cast<std::uint32_t>(region.begin.line),
                   static_cast<std::uint32_t>(region.begin.column)};
}

bool TomlWalk::fail(const toml::source_region& region, const std::string& message) {
  errors_.push_back(PolicyError{position(region), escape_for_display(message, false)});
  return false;
}

void TomlWalk::note(const toml::source_region& region, const std::string& message) {
  notes_.push_back(PolicyError{position(region), escape_for_display(message, false)});
}

void TomlWalk::note_size_reading(const toml::node& node) {
  if (const auto* text = node.as_string()) {
    if (const std::string reading = ambiguous_size_reading(text->get()); !reading.empty()) {
      note(node.source(), reading);
    }
  }
}

bool TomlWalk::check_keys(const toml::table& table, std::span<const std::string_view> allowed,
                          const std::string& where) {
  bool all_known = true;
  for (auto&& [key, node] : table) {
    if (std::find(allowed.begin(), allowed.end(), key.str()) == allowed.end()) {
      all_known = fail(key.source(), unknown_key_message(key.str(), where, allowed));
    }
  }
  return all_known;
}

const toml::table* TomlWalk::as_table(const toml::node& node, const std::string& name) {
  const toml::table* table = node.as_table();
  if (table == nullptr) {
    fail(node.source(), "'" + name + "' must be a table, not " + describe(policy_value(node)));
  }
  return table;
}

std::vector<std::pair<std::string, const toml::node*>> TomlWalk::string_list(const toml::node& node,
                                                                             const std::string& name) {
  std::vector<std::pair<std::string, const toml::node*>> out;
  if (const auto* s = node.as_string()) {
    out.emplace_back(s->get(), &node);
  } else if (const auto* array = node.as_array()) {
    for (const toml::node& item : *array) {
      if (const auto* is = item.as_string()) {
        out.emplace_back(is->get(), &item);
      } else {
        fail(item.source(), "'" + name + "' entries must be strings, not " + describe(policy_value(item)));
        return {};
      }
    }
  } else {
    fail(node.source(), "'" + name + "' must be a string or an array of strings, not " + describe(policy_value(node)));
  }
  return out;
}

}  // namespace tcptune::config
