// The policy `tcptune advise --output FILE` writes: one rule per scope the findings name, each
// commented with the findings it fixes. It passes `tcptune check` (the command loads it before
// writing it).
#pragma once

#include <string>
#include <vector>

#include "advise_finding.hpp"

namespace tcptune::cli {

struct WrittenRule {
  std::string name;
  AdviceScope scope;
  std::vector<std::pair<std::string, std::string>> keys;  // key, TOML value
  std::vector<const Finding*> findings;                   // what each rule fixes
};

// The findings' rules: those of one scope merged into one rule; narrower rules first, each also
// carrying the keys of the broader ones that match its sockets too (the first matching rule
// is the only one applied). Empty when no finding has a rule.
std::vector<WrittenRule> advised_rules(const std::vector<Finding>& findings);

// One rule as TOML: [[rule]], name, match, keys.
std::string rule_toml(const std::string& name, const AdviceScope& scope,
                      const std::vector<std::pair<std::string, std::string>>& keys);

// The whole policy: a header naming the logs, then each rule after its findings' comments.
// Empty when there is no rule.
std::string advised_policy(const std::vector<Finding>& findings, const std::vector<std::string>& logs);

}  // namespace tcptune::cli
