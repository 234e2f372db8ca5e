// The loader's walk over a parsed TOML document: positions, every error, unknown keys, and the
// step from a toml++ node to the value parsers (value_parsers.hpp).
#pragma once

#include <toml++/toml.h>

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tcptune/config/policy_loader.hpp"
#include "tcptune/config/units.hpp"
#include "tcptune/config/value_parsers.hpp"

namespace tcptune::config {

struct TomlNode {
  const toml::node& node;
};

// A node as the value parsers see it.
PolicyValue policy_value(const toml::node& node);

class TomlWalk {
 public:
  explicit TomlWalk(std::string source) : source_(std::move(source)) {}

  [[nodiscard]] const std::string& source() const { return source_; }
  [[nodiscard]] SourcePos position(const toml::source_region& region) const;

  // Keeps every error, so that one pass reports all of them; a reader gives up only on the value
  // it is reading. Messages quote the policy's strings, which may hold a newline
  // ("keep_warm = \"\\n\""): every control character is escaped so an error stays one line.
  bool fail(const toml::source_region& region, const std::string& message);
  [[nodiscard]] bool failed() const { return !errors_.empty(); }
  [[nodiscard]] const std::vector<PolicyError>& errors() const { return errors_; }
  // How many errors so far: a reader compares it with a later count to know whether the part it
  // read was sound (failed_since), whatever was reported before it.
  [[nodiscard]] std::size_t mark() const { return errors_.size(); }
  [[nodiscard]] bool failed_since(std::size_t mark) const { return errors_.size() > mark; }

  // A remark that is not an error (how an ambiguous value was read), for `tcptune check`.
  void note(const toml::source_region& region, const std::string& message);
  [[nodiscard]] const std::vector<PolicyError>& notes() const { return notes_; }
  // A note when `node` is a size written with a unit read two ways ("4M").
  void note_size_reading(const toml::node& node);

  // An error at each key of `table` not in `allowed` ("unknown key 'x' in [defaults]; did you
  // mean ...", or where that key belongs); false when there was one.
  bool check_keys(const toml::table& table, std::span<const std::string_view> allowed, const std::string& where);

  // The node as a table, or nullptr after "'name' must be a table".
  const toml::table* as_table(const toml::node& node, const std::string& name);

  // A parser's value, or nullopt after reporting its reason at `node`.
  template <typename T>
  std::optional<T> take(const toml::node& node, Parsed<T> parsed) {
    if (parsed.ok()) {
      return std::move(std::get<0>(parsed.value_or_error));
    }
    fail(node.source(), parsed.error());
    return std::nullopt;
  }

  // A string or an array of strings, each with its node.
  std::vector<std::pair<std::string, const toml::node*>> string_list(const toml::node& node, const std::string& name);

 private:
  std::string source_;
  std::vector<PolicyError> errors_;
  std::vector<PolicyError> notes_;
};

}  // namespace tcptune::config
