#include "advise_policy_writer.hpp"

#include <algorithm>
#include <cstdio>
#include <set>

#include "advise_toml.hpp"
#include "tcptune/config/utf8.hpp"

namespace tcptune::cli {

namespace {

template <typename T>
bool covers(const std::vector<T>& broad, const std::vector<T>& narrow) {
  if (broad.empty()) {
    return true;
  }
  if (narrow.empty()) {
    return false;
  }
  const std::set<T> all(broad.begin(), broad.end());
  return std::all_of(narrow.begin(), narrow.end(), [&](const T& item) { return all.count(item) != 0; });
}

// Every socket `narrow` matches, `broad` matches too.
bool contains(const AdviceScope& broad, const AdviceScope& narrow) {
  return (broad.role.empty() || broad.role == narrow.role) && covers(broad.programs, narrow.programs) &&
         covers(broad.ports, narrow.ports) && covers(broad.peers, narrow.peers);
}

std::size_t narrowness(const AdviceScope& scope) {
  return (scope.peers.empty() ? 0 : 8) + (scope.ports.empty() ? 0 : 4) + (scope.programs.empty() ? 0 : 2) +
         (scope.role.empty() ? 0 : 1);
}

void add_key(WrittenRule& rule, const std::string& key, const std::string& value) {
  for (auto& [name, current] : rule.keys) {
    if (name == key) {
      if (key == "nodelay" && value == "\"force\"") {
        current = value;  // force includes on
      }
      return;
    }
  }
  rule.keys.emplace_back(key, value);
}

// TOML forbids control characters other than tab, and bytes that are not UTF-8, in a comment; a
// program's name or a file's path may hold one, shown as its escape.
std::string comment(const std::string& text) {
  std::string out = "# ";
  for (std::size_t pos = 0; pos < text.size();) {
    const char c = text[pos];
    const auto byte = static_cast<unsigned char>(c);
    const config::Utf8Character character = config::utf8_character_at(text, pos);
    if (c == '\n') {
      out += "\n# ";
    } else if ((byte < 0x20 && c != '\t') || byte == 0x7f || character.length == 0) {
      char escaped[8];
      (void)std::snprintf(escaped, sizeof escaped, "\\x%02x", byte);
      out += escaped;
    } else {
      out.append(text, pos, character.length);
    }
    pos += character.length == 0 ? 1 : character.length;
  }
  return out + "\n";
}

}  // namespace

std::vector<WrittenRule> advised_rules(const std::vector<Finding>& findings) {
  std::vector<WrittenRule> rules;
  for (const Finding& finding : findings) {
    if (!finding.has_rule) {
      continue;
    }
    auto found = std::find_if(rules.begin(), rules.end(),
                              [&](const WrittenRule& rule) { return rule.scope == finding.rule.scope; });
    if (found == rules.end()) {
      rules.push_back({finding.rule.scope.rule_name(), finding.rule.scope, {}, {}});
      found = rules.end() - 1;
    }
    for (const auto& [key, value] : finding.rule.keys) {
      add_key(*found, key, value);
    }
    found->findings.push_back(&finding);
  }
  std::stable_sort(rules.begin(), rules.end(), [](const WrittenRule& a, const WrittenRule& b) {
    return narrowness(a.scope) > narrowness(b.scope);
  });
  // A narrower rule comes first and is then the only one applied to its sockets: it carries the
  // broader rules' keys too.
  for (std::size_t i = 0; i < rules.size(); ++i) {
    for (std::size_t j = i + 1; j < rules.size(); ++j) {
      if (contains(rules[j].scope, rules[i].scope)) {
        for (const auto& [key, value] : rules[j].keys) {
          add_key(rules[i], key, value);
        }
      }
    }
  }
  std::set<std::string> names;
  for (WrittenRule& rule : rules) {
    std::string name = rule.name;
    for (int n = 2; !names.insert(name).second; ++n) {
      name = rule.name + "-" + std::to_string(n);
    }
    rule.name = name;
  }
  return rules;
}

std::string rule_toml(const std::string& name, const AdviceScope& scope,
                      const std::vector<std::pair<std::string, std::string>>& keys) {
  std::string out = "[[rule]]\nname = " + toml_string(name) + "\n";
  if (const std::string match = scope.match_toml(); !match.empty()) {
    out += "match = " + match + "\n";
  }
  for (const auto& [key, value] : keys) {
    out += key + " = " + value + "\n";
  }
  return out;
}

std::string advised_policy(const std::vector<Finding>& findings, const std::vector<std::string>& logs) {
  const std::vector<WrittenRule> rules = advised_rules(findings);
  if (rules.empty()) {
    return {};
  }
  std::string out = comment("Written by tcptune advise from " + std::to_string(logs.size()) +
                            " log(s). Each rule names the findings it fixes; `tcptune check FILE` explains it, "
                            "and the `tcptune ab` command under each finding measures it.");
  for (const std::string& log : logs) {
    out += comment("  " + log);
  }
  out += "version = 1\n";
  for (const WrittenRule& rule : rules) {
    out += "\n";
    for (const Finding* finding : rule.findings) {
      out += comment(finding->id + ": " + finding->title);
      out += comment("  cause: " + finding->cause);
      out += comment("  evidence: " + finding->evidence);
      out += comment("  expected: " + finding->gain + " (" + finding->gain_arithmetic + ")");
      if (finding->tune == "peer") {
        out += comment("  for the peer: this rule is for the other end's policy (" + rule.scope.describe() + ")");
      }
      if (!finding->prove.empty()) {
        out += comment("  prove: " + finding->prove);
      }
    }
    out += rule_toml(rule.name, rule.scope, rule.keys);
  }
  return out;
}

}  // namespace tcptune::cli
