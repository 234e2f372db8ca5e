// A check of policy text before toml++ parses it. toml++ 3.3 (Debian 12) reaches an assert,
// an assume or __builtin_unreachable() on some malformed input: an abort in a debug build and
// undefined behaviour in a release one, inside the app the shim is preloaded into. The guard
// rejects those inputs with a one-line reason and its position. (The size of a policy is bounded
// where it is read: kMaxPolicyBytes in policy_loader.hpp.)
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace tcptune::config {

struct TomlInputProblem {
  std::uint32_t line = 0;    // 1-based
  std::uint32_t column = 0;  // 1-based, in code points as toml++ counts them
  std::string message;       // one line, without the position
};

// The first reason not to hand `text` to toml++, or nullopt when it may parse it. Rejects only
// text that is not valid TOML 1.0, except a non-ASCII character first after a line-ending
// backslash in a multi-line string, which toml++ 3.3 itself mishandles.
std::optional<TomlInputProblem> find_toml_input_problem(std::string_view text);

}  // namespace tcptune::config
