#include "ab_table.hpp"

#include <algorithm>
#include <cstdio>

namespace tcptune::cli {

namespace {

std::string number(double value) {
  char text[32];
  (void)std::snprintf(text, sizeof text, "%.4g", value);
  return text;
}

}  // namespace

std::string format_value(const RunValue& value) {
  return (value.below_resolution ? "<" : "") + number(value.value);
}

std::string format_arm(const std::vector<RunValue>& runs) {
  if (runs.empty()) {
    return "-";
  }
  const ArmSummary summary = summarize_arm(runs);
  return (summary.median_below_resolution ? "<" : "") + number(summary.median) + " [" + format_value(summary.low) +
         "-" + format_value(summary.high) + "]";
}

std::string format_ratio(const Verdict& verdict) {
  if (!verdict.ratio) {
    return "-";
  }
  char text[64];
  const char* bound = verdict.ratio_bound == '<' ? "<" : verdict.ratio_bound == '>' ? ">" : "";
  if (verdict.interval) {
    (void)std::snprintf(text, sizeof text, "%s%.3g [%.3g-%.3g]", bound, *verdict.ratio, verdict.interval->low,
                        verdict.interval->high);
  } else {
    (void)std::snprintf(text, sizeof text, "%s%.3g", bound, *verdict.ratio);
  }
  return text;
}

std::vector<std::string> metric_cells(const AbMetric& metric) {
  std::string p_value;
  if (!metric.verdict.word.empty()) {
    char text[16];
    (void)std::snprintf(text, sizeof text, "%.2g", metric.verdict.test.p_value);
    p_value = text;
  }
  return {metric.label(),     format_arm(metric.observe), format_arm(metric.tuned), format_ratio(metric.verdict),
          std::move(p_value), metric.verdict.word};
}

std::string ab_table(const AbResults& results) {
  std::size_t runs = 0;
  for (const AbRun& run : results.runs) {
    runs += run.arm == results.observe.name ? 1 : 0;
  }
  std::string text = !results.heading.empty()
                         ? results.heading + "\n"
                         : std::to_string(runs) +
                               " run(s) per arm, interleaved; median [min-max] across runs; tuned/obs: ratio of "
                               "medians [95% bootstrap interval]; p: Mann-Whitney U, two-sided; verdict at p < 0.05\n";
  std::vector<std::vector<std::string>> rows = {
      {"metric", results.observe.name, results.tuned.name, results.ratio_label, "p", "verdict"}};
  for (const AbMetric& metric : results.metrics) {
    rows.push_back(metric_cells(metric));
  }
  std::vector<std::size_t> widths(rows.front().size(), 0);
  for (const auto& row : rows) {
    for (std::size_t column = 0; column < row.size(); ++column) {
      widths[column] = std::max(widths[column], row[column].size());
    }
  }
  for (const auto& row : rows) {
    std::string line;
    for (std::size_t column = 0; column < row.size(); ++column) {
      line += row[column];
      if (column + 1 < row.size()) {
        line += std::string(widths[column] - row[column].size() + 2, ' ');
      }
    }
    text += line.substr(0, line.find_last_not_of(' ') + 1) + "\n";
  }
  for (const std::string& line : results.beside) {
    text += line + "\n";
  }
  for (const AbMetric& metric : results.metrics) {
    if (!metric.verdict.advice.empty()) {
      text += metric.name + ": " + metric.verdict.advice + "\n";
    } else if (!metric.verdict.reason.empty()) {
      text += metric.name + ": not judged: " + metric.verdict.reason + "\n";
    }
  }
  for (const std::string& note : results.notes) {
    text += "note: " + note + "\n";
  }
  return text;
}

std::string shell_words(const std::vector<std::string>& words) {
  std::string line;
  for (const std::string& word : words) {
    if (!line.empty()) {
      line += ' ';
    }
    const bool plain = !word.empty() && word.find_first_not_of(
                                            "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                            "0123456789-_./:=,+@%") == std::string::npos;
    if (plain) {
      line += word;
      continue;
    }
    line += '\'';
    for (char c : word) {
      line += c == '\'' ? std::string("'\\''") : std::string(1, c);
    }
    line += '\'';
  }
  return line;
}

}  // namespace tcptune::cli
