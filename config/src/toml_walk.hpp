// The loader's walk over a parsed TOML document: positions, the first error, unknown keys, and
// the step from a toml++ node to the value parsers (value_parsers.hpp).
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

  // Keeps the first error only. Messages quote the policy's strings, which may hold a newline
  // ("keep_warm = \"\\n\""): every control character is escaped so an error stays one line.
  bool fail(const toml::source_region& region, const std::string& message);
  [[nodiscard]] bool failed() const { return error_.has_value(); }
  [[nodiscard]] const std::optional<PolicyError>& error() const { return error_; }

  // An error at the first key of `table` not in `allowed` ("unknown key 'x' in [defaults]; did you mean ...").
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
  std::optional<PolicyError> error_;
};

}  // namespace tcptune::config
