// Rules that can never match: an earlier rule takes every socket they would (first match wins).
#pragma once

#include <cstddef>
#include <vector>

#include "tcptune/config/policy.hpp"

namespace tcptune::config {

// Whether every socket `later` matches is also matched by `earlier`, computed on the match
// fields: role, ports, peers and programs. Conservative: a program glob is taken to cover
// another only when they are equal, it is "*", or the other has no wildcard and fits it.
bool match_covers(const Match& earlier, const Match& later);

struct ShadowedRule {
  std::size_t rule = 0;  // index into Policy::rules of the rule that never matches
  std::size_t by = 0;    // the first earlier rule whose match covers it
};

// Every rule an earlier one shadows, in the policy's order.
std::vector<ShadowedRule> shadowed_rules(const Policy& policy);

}  // namespace tcptune::config
