// The arm of a fleet A/B a process belongs to: TCPTUNE_ARM=NAME in its environment puts
// arm="NAME" on every series of its Prometheus textfile and an "arm" field in its records, so
// that `tcptune ab --prometheus` can tell the arms apart. One reading for the preloaded shim,
// the supervisor and `tcptune run --arm`.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace tcptune::config {

inline constexpr const char* kArmEnv = "TCPTUNE_ARM";
inline constexpr std::size_t kLongestArm = 32;

// Empty when `name` is an arm: 1 to 32 letters, digits, '_', '-' or '.', starting with a
// letter or digit (safe as a label value, in PromQL and in a file name, and short). Otherwise
// what is wrong with it, e.g. "'on arm' is not an arm name: ...".
std::string arm_name_problem(std::string_view name);

struct ArmFromEnvironment {
  std::string arm;      // empty: none, or one that was ignored
  std::string problem;  // one line for stderr when TCPTUNE_ARM was set to something else
};

// TCPTUNE_ARM as read from `value` (getenv's result; nullptr or "": no arm). A bad value is
// ignored (fail-open) with the line to say once.
ArmFromEnvironment arm_from_environment(const char* value);

}  // namespace tcptune::config
