// What one `tcptune ab` found: the arms, every run, each metric's values and verdict, and the
// plots. The table, summary.json and report.html are all written from it.
#pragma once

#include <string>
#include <vector>

#include "ab_verdict.hpp"

namespace tcptune::cli {

struct AbArm {
  std::string name;         // "observe-only" or "tuned"
  std::string policy;       // the policy file it ran with
  std::string policy_text;  // its text, as every run got it
};

struct AbRun {
  std::string arm;
  int run = 0;          // 1-based, per arm
  std::string outcome;  // "exit 0", "killed by signal 15 (Terminated)"
  bool failed = false;
  double wall_s = 0;
  std::string log;  // file names, in the out directory
  std::string latency_file;
  std::size_t requests = 0;  // latencies the program handed over
  std::uint64_t bad_latency_lines = 0;
  std::string first_bad_latency_line;
};

struct AbMetric {
  std::string name;  // "wall time", "request p50", ...
  std::string unit;  // "s", "ms", "us", "MB/s", "" for counts
  Better better = Better::unjudged;
  std::vector<RunValue> observe;  // one per run that had a value
  std::vector<RunValue> tuned;
  Verdict verdict;

  [[nodiscard]] std::string label() const { return unit.empty() ? name : name + " (" + unit + ")"; }
};

struct AbPlot {
  std::string file;                // in the out directory
  std::string title;               // what it shows
  std::string svg;                 // the drawing, inlined in report.html
  std::vector<std::string> notes;  // curves that could not be drawn, and why
};

struct AbResults {
  std::vector<std::string> command;
  std::string invocation;  // the tcptune ab command line that reproduces this comparison
  AbArm observe;
  AbArm tuned;
  int runs_requested = 0;
  std::vector<AbRun> runs;  // in the order they ran
  std::vector<AbMetric> metrics;
  std::vector<AbPlot> plots;
  std::vector<std::string> notes;  // what the reader must know: failed runs, unread latency lines

  // A fleet A/B (`tcptune ab --prometheus`) compares steps of a time window, not runs: its own
  // first line of the table, ratio column, report paragraphs, and lines shown beside the
  // verdict (what observing costs). Empty: those of runs.
  std::string heading;
  std::string ratio_label = "tuned/obs";
  std::vector<std::string> beside;  // printed after the table, before the advice
  std::string intro_html;
  std::string method_html;
};

}  // namespace tcptune::cli
