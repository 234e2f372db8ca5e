#include "tcptune/config/policy_keys.hpp"

#include "key_places.hpp"

namespace tcptune::config {

std::span<const std::string_view> top_level_keys() {
  return kTopKeys;
}

std::span<const std::string_view> rule_own_keys() {
  return kRuleOwnKeys;
}

std::span<const std::string_view> match_keys() {
  return kMatchKeys;
}

std::span<const std::string_view> log_keys() {
  return kLogKeys;
}

}  // namespace tcptune::config
