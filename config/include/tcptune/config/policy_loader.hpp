// TOML text -> Policy. Errors are one line: "FILE:LINE:COLUMN: what is wrong".
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <variant>

#include "tcptune/config/policy.hpp"

namespace tcptune::config {

struct PolicyError {
  SourcePos pos;
  std::string message;  // without the position
  // "FILE:LINE:COLUMN: message" (LINE/COLUMN omitted when unknown).
  [[nodiscard]] std::string to_string() const;
};

struct LoadResult {
  std::variant<Policy, PolicyError> policy_or_error;
  [[nodiscard]] bool ok() const { return policy_or_error.index() == 0; }
  [[nodiscard]] const Policy& policy() const { return std::get<0>(policy_or_error); }
  [[nodiscard]] Policy& policy() { return std::get<0>(policy_or_error); }
  [[nodiscard]] const PolicyError& error() const { return std::get<1>(policy_or_error); }
};

// The longest policy, file or TCPTUNE_POLICY_TOML, in bytes: every preloaded process parses it
// before main, and real policies are a few KiB (4096 rules of 256 bytes fit).
inline constexpr std::size_t kMaxPolicyBytes = std::size_t{1} << 20;

// The stack the text is checked, parsed and read on, whatever stack the caller runs on (a
// thread's may be small): mapped for the call (private_stack.hpp). Its worst case is measured
// in toml_input_guard.hpp.
inline constexpr std::size_t kPolicyStackBytes = std::size_t{1} << 20;

// `source_name` is used in messages and in Policy::source. With `stack_used` set, stores how
// much of the private stack the load touched (for tests of the worst case).
LoadResult load_policy_text(std::string_view toml_text, const std::string& source_name,
                            std::size_t* stack_used = nullptr);
// Only a regular file of at most kMaxPolicyBytes is a policy. The path is opened without
// blocking (a FIFO would otherwise wait for a writer) and checked on the opened descriptor.
// The text read, or the error naming `path`.
std::variant<std::string, PolicyError> read_policy_file(const std::string& path);
// read_policy_file, then load_policy_text with the path as the source name.
LoadResult load_policy_file(const std::string& path);

// Where the policy comes from, in order: TCPTUNE_POLICY (path), TCPTUNE_POLICY_TOML (inline),
// /etc/tcptune/policy.toml, the built-in default. Environment variables are ignored when
// `secure_execution` (AT_SECURE) is true.
struct PolicySource {
  enum class Kind { env_path, env_inline, system_file, builtin } kind = Kind::builtin;
  std::string path_or_text;
  // TCPTUNE_POLICY_NAME: what messages and records call a policy from the environment (`tcptune
  // run` passes the file it validated as its text, and names that file); empty: the path, or
  // "TCPTUNE_POLICY_TOML".
  std::string name;
};
PolicySource discover_policy_source(bool secure_execution, const char* system_path = "/etc/tcptune/policy.toml");
// A discovered policy's text and the name messages and records give it (Kind::builtin has none).
struct PolicyText {
  std::string name;
  std::string text;
};
std::variant<PolicyText, PolicyError> read_discovered(const PolicySource& source);
// read_discovered, then load_policy_text; the built-in default for Kind::builtin.
LoadResult load_discovered(const PolicySource& source);

}  // namespace tcptune::config
