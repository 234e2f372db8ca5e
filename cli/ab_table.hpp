// `tcptune ab`'s table as text (stdout and summary.txt): per metric each arm's median and range
// across runs, the ratio of medians with its interval, the p-value and the verdict; then the
// advice and the reasons a metric was not judged.
#pragma once

#include <string>
#include <vector>

#include "ab_results.hpp"

namespace tcptune::cli {

// A value as the table and the report show it: 4 significant digits; below the resolution
// "<" and the resolution ("<1"), never 0.
std::string format_value(const RunValue& value);
// "median [low-high]"; "-" for no runs.
std::string format_arm(const std::vector<RunValue>& runs);
// "ratio [low-high]", "ratio" without an interval, "-" without a ratio; "<" or ">" first when
// the ratio is a bound.
std::string format_ratio(const Verdict& verdict);
// A row's cells: label, each arm, ratio, p-value and verdict (the last two empty when not judged).
std::vector<std::string> metric_cells(const AbMetric& metric);
// The heading, every row in columns two spaces apart, then one line per advice or reason.
std::string ab_table(const AbResults& results);

// The command as a shell reads it back: words single-quoted where they need to be.
std::string shell_words(const std::vector<std::string>& words);

}  // namespace tcptune::cli
