// The policy of one `tcptune run`: read and validated once, then handed to every process of the
// run as that text, not as a path, so that an edit of the file while the program runs (an
// editor's truncate-then-write) changes nothing for the programs it starts later.
#pragma once

#include <cstddef>
#include <string>

#include "tcptune/config/policy_loader.hpp"

namespace tcptune::cli {

// Up to this size the text goes in the environment, as TCPTUNE_POLICY_TOML named by
// TCPTUNE_POLICY_NAME: it survives exec, a program that closes every descriptor, a change of
// user and a new mount namespace. A larger policy (one may have 1 MiB, and the kernel takes at
// most 128 KiB per environment string, 2 MiB for all) is copied to a file of its own instead.
inline constexpr std::size_t kMaxPolicyInEnvironment = std::size_t{64} << 10;

// Sets TCPTUNE_POLICY_TOML to `text` and TCPTUNE_POLICY_NAME to `name` (unsetting
// TCPTUNE_POLICY, which would come first); false, changing nothing, when `text` cannot go in the
// environment (larger than kMaxPolicyInEnvironment, or holding a NUL).
bool put_policy_text_in_environment(const std::string& text, const std::string& name);

class RunPolicy {
 public:
  RunPolicy() = default;
  RunPolicy(const RunPolicy&) = delete;
  RunPolicy& operator=(const RunPolicy&) = delete;
  ~RunPolicy() { remove_copy(); }

  // `file` (--policy) when given, else TCPTUNE_POLICY, else what the shim would discover.
  [[nodiscard]] config::LoadResult load(const std::string& file);
  // A policy that is no file (the observe-only one), named `name` in messages and records.
  [[nodiscard]] config::LoadResult load_text(const std::string& text, const std::string& name);
  // Puts the policy just loaded from a file in the environment of the processes to come.
  // Empty, or why it could not (the path is then passed, as before).
  std::string pass_on();
  // A private copy exists: it is removed at the end of the run, so tcptune must outlive the program.
  [[nodiscard]] bool has_copy() const { return !copy_dir_.empty(); }
  void remove_copy();

 private:
  std::string text_;  // the file's text as validated; empty when the policy is not from a file
  std::string name_;  // the file as messages and records name it
  std::string copy_dir_;
  std::string copy_file_;
};

}  // namespace tcptune::cli
