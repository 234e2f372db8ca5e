#include "ab_table.hpp"

#include <cstdio>

namespace tcptune::cli {

namespace {

std::string number(double value) {
  char text[32];
  (void)std::snprintf(text, sizeof text, "%.4g", value);
  return text;
}

constexpr const char* kRowFormat = "%-20s %-26s %-26s %-24s %-8s %s\n";

}  // namespace

std::string format_value(const RunValue& value) { return (value.below_resolution ? "<" : "") + number(value.value); }

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
  if (verdict.interval) {
    (void)std::snprintf(text, sizeof text, "%.3g [%.3g-%.3g]", *verdict.ratio, verdict.interval->low,
                        verdict.interval->high);
  } else {
    (void)std::snprintf(text, sizeof text, "%.3g", *verdict.ratio);
  }
  return text;
}

std::string metric_row(const AbMetric& metric) {
  const bool judged = !metric.verdict.word.empty();
  char p_value[16] = "";
  if (judged) {
    (void)std::snprintf(p_value, sizeof p_value, "%.2g", metric.verdict.test.p_value);
  }
  const std::string ratio = format_ratio(metric.verdict);
  char row[256];
  (void)std::snprintf(row, sizeof row, kRowFormat, metric.label().c_str(), format_arm(metric.observe).c_str(),
                      format_arm(metric.tuned).c_str(), ratio.c_str(), p_value, metric.verdict.word.c_str());
  return row;
}

std::string ab_table(const AbResults& results) {
  std::size_t runs = 0;
  for (const AbRun& run : results.runs) {
    runs += run.arm == results.observe.name ? 1 : 0;
  }
  std::string text = std::to_string(runs) +
                     " run(s) per arm, interleaved; median [min-max] across runs; tuned/obs: ratio of medians [95% "
                     "bootstrap interval]; p: Mann-Whitney U, two-sided; verdict at p < 0.05\n";
  char heading[256];
  (void)std::snprintf(heading, sizeof heading, kRowFormat, "metric", results.observe.name.c_str(),
                      results.tuned.name.c_str(), "tuned/obs", "p", "verdict");
  text += heading;
  for (const AbMetric& metric : results.metrics) {
    text += metric_row(metric);
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
    const bool plain = !word.empty() && word.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
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
