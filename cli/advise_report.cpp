#include "advise_report.hpp"

#include "advise_policy_writer.hpp"

namespace tcptune::cli {

namespace {

constexpr std::size_t kMostNamed = 8;  // programs, peers or logs of a finding, in the text

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& item : items) {
    out += (out.empty() ? "" : ", ") + item;
  }
  return out;
}

// At most `most` of the items, then how many more: a program with thousands of peers gets a line
// a person can read (--json lists them all).
std::string join_some(const std::vector<std::string>& items, std::size_t most) {
  if (items.size() <= most) {
    return join(items);
  }
  return join(std::vector<std::string>(items.begin(), items.begin() + static_cast<std::ptrdiff_t>(most))) + " and " +
         std::to_string(items.size() - most) + " more (--json lists them all)";
}

std::string indented(const std::string& text, const char* indent) {
  std::string out = indent;
  for (std::size_t i = 0; i < text.size(); ++i) {
    out += text[i];
    if (text[i] == '\n' && i + 1 < text.size()) {
      out += indent;
    }
  }
  return out;
}

std::uint64_t measured_connections(const Observations& observations) {
  std::uint64_t count = 0;
  for (const ObservedConnection& connection : observations.connections) {
    count += connection.is_listener() ? 0 : 1;
  }
  return count;
}

std::vector<std::string> programs_of(const Observations& observations) {
  std::vector<std::string> programs;
  for (const ObservedConnection& connection : observations.connections) {
    programs.push_back(connection.program);
  }
  return sorted_unique(programs);
}

// Connections whose writes no record shows (supervised: the shim is not in the process): the
// causes read from writes (Nagle with delayed ACK) cannot be judged there, which a clean report
// must not hide. Empty when every connection's writes were measured.
std::string unjudged_note(const Observations& observations) {
  std::uint64_t count = 0;
  std::vector<std::string> programs;
  for (const ObservedConnection& connection : observations.connections) {
    if (!connection.is_listener() && !connection.writes_measured) {
      ++count;
      programs.push_back(connection.program);
    }
  }
  if (count == 0) {
    return {};
  }
  return std::to_string(count) + " connection(s) of " + join(sorted_unique(programs)) +
         " tuned from outside (supervised): their writes are not seen, so Nagle with delayed ACK is not judged "
         "there";
}

}  // namespace

void print_findings(std::FILE* out, const std::vector<Finding>& findings, const Observations& observations) {
  const std::vector<std::string> programs = programs_of(observations);
  (void)std::fprintf(out, "%zu finding(s) from %zu log(s): %llu connection(s) of %s\n", findings.size(),
                     observations.files.size(), static_cast<unsigned long long>(measured_connections(observations)),
                     programs.empty() ? "no program" : join(programs).c_str());
  if (const std::string unjudged = unjudged_note(observations); !unjudged.empty()) {
    (void)std::fprintf(out, "not judged: %s\n", unjudged.c_str());
  }
  if (findings.empty()) {
    (void)std::fputs("nothing to change: no cause tcptune advise knows shows in these records\n", out);
    return;
  }
  int number = 0;
  for (const Finding& finding : findings) {
    (void)std::fprintf(out, "\n[%d] %s\n    %s\n", ++number, finding.id.c_str(), finding.title.c_str());
    (void)std::fprintf(out, "  cause:     %s\n", finding.cause.c_str());
    (void)std::fprintf(out, "  evidence:  %s\n", finding.evidence.c_str());
    (void)std::fprintf(out, "             programs %s; roles %s; peers %s; logs %s\n",
                       join_some(finding.programs, kMostNamed).c_str(), join(finding.roles).c_str(),
                       join_some(finding.peers, kMostNamed).c_str(), join_some(finding.logs, kMostNamed).c_str());
    (void)std::fprintf(out, "  fix:       %s%s\n", finding.tune == "peer" ? "tune the peer: " : "",
                       finding.fix.c_str());
    if (finding.has_rule) {
      (void)std::fprintf(
          out, "%s",
          indented(rule_toml(finding.rule.scope.rule_name(), finding.rule.scope, finding.rule.keys), "             ")
              .c_str());
    }
    (void)std::fprintf(out, "  expected:  %s\n             %s\n", finding.gain.c_str(),
                       finding.gain_arithmetic.c_str());
    for (const std::string& alternative : finding.alternatives) {
      (void)std::fprintf(out, "  instead:   %s\n", alternative.c_str());
    }
    if (!finding.prove.empty()) {
      (void)std::fprintf(out, "  prove:     %s\n", finding.prove.c_str());
    }
  }
}

nlohmann::ordered_json findings_json(const std::vector<Finding>& findings, const Observations& observations) {
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const Finding& finding : findings) {
    nlohmann::ordered_json figures = nlohmann::ordered_json::object();
    for (const auto& [name, value] : finding.figures) {
      figures[name] = value;
    }
    nlohmann::ordered_json evidence = {{"connections", finding.connections},
                                       {"writes", finding.writes},
                                       {"programs", finding.programs},
                                       {"roles", finding.roles},
                                       {"peers", finding.peers},
                                       {"ports", finding.ports},
                                       {"logs", finding.logs},
                                       {"figures", figures},
                                       {"summary", finding.evidence}};
    nlohmann::ordered_json rule = nullptr;
    if (finding.has_rule) {
      nlohmann::ordered_json keys = nlohmann::ordered_json::object();
      for (const auto& [key, value] : finding.rule.keys) {
        keys[key] = value;
      }
      rule = {{"name", finding.rule.scope.rule_name()},
              {"match", finding.rule.scope.match_toml()},
              {"keys", keys},
              {"toml", rule_toml(finding.rule.scope.rule_name(), finding.rule.scope, finding.rule.keys)}};
    }
    list.push_back(
        {{"id", finding.id},
         {"cause_code", finding.cause_code},
         {"title", finding.title},
         {"cause", finding.cause},
         {"tune", finding.tune},
         {"evidence", evidence},
         {"fix", {{"summary", finding.fix}, {"rule", rule}}},
         {"expected_gain", {{"summary", finding.gain}, {"arithmetic", finding.gain_arithmetic}}},
         {"alternatives", finding.alternatives},
         {"prove", finding.prove.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(finding.prove)}});
  }
  std::vector<std::string> logs;
  for (const FileRead& read : observations.files) {
    logs.push_back(read.path);
  }
  const std::string unjudged = unjudged_note(observations);
  return {{"findings", list},
          {"not_judged", unjudged.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(unjudged)},
          {"connections", measured_connections(observations)},
          {"records", observations.records},
          {"logs", logs}};
}

}  // namespace tcptune::cli
