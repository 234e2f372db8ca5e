// `tcptune advise`'s findings for people (text) and for machines (--json: {"findings": [...]}).
#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "advise_finding.hpp"
#include "advise_observations.hpp"

namespace tcptune::cli {

// Each finding: ID, cause, evidence, fix (the rule as TOML), expected gain with its arithmetic,
// alternatives and the `tcptune ab` command; "no finding" with what was read when there is none.
void print_findings(std::FILE* out, const std::vector<Finding>& findings, const Observations& observations);

// {"findings": [{"id", "cause_code", "title", "cause", "tune", "evidence": {...}, "fix": {...},
// "expected_gain": {...}, "alternatives", "prove"}], "connections", "records", "logs"}.
nlohmann::ordered_json findings_json(const std::vector<Finding>& findings, const Observations& observations);

}  // namespace tcptune::cli
