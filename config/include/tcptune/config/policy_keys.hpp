// The policy's keys outside the tuning table (tuning_keys.hpp): the top-level ones, a rule's own,
// `match`'s and [log]'s. The loader accepts exactly these, and the manual's drift test checks that
// tcptune-policy(5) names each.
#pragma once

#include <span>
#include <string_view>

namespace tcptune::config {

std::span<const std::string_view> top_level_keys();  // version, defaults, log, rule
std::span<const std::string_view> rule_own_keys();   // a [[rule]]'s keys besides the tuning keys
std::span<const std::string_view> match_keys();
std::span<const std::string_view> log_keys();

}  // namespace tcptune::config
