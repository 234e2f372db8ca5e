#include "tcptune/config/policy_keys.hpp"

namespace tcptune::config {

namespace {

constexpr std::string_view kTopLevelKeys[] = {"version", "defaults", "log", "rule"};
constexpr std::string_view kRuleOwnKeys[] = {"name", "match"};
constexpr std::string_view kMatchKeys[] = {"peer", "port", "role", "program"};
constexpr std::string_view kLogKeys[] = {"path",     "level",      "format",       "prometheus_textfile",
                                         "interval", "slow_write", "trace_writes", "rotate_size",
                                         "keep",     "callsite",   "summary"};

}  // namespace

std::span<const std::string_view> top_level_keys() {
  return kTopLevelKeys;
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
