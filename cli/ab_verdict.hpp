// A metric's verdict in `tcptune ab`: better, worse or no difference shown, with its p-value,
// the ratio of medians and its bootstrap interval, and what more runs would show when the arms
// overlap. The runs are the samples (one value per run and arm): requests within one run share
// that run's conditions, so pooling them would overstate the confidence.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "ab_statistics.hpp"

namespace tcptune::cli {

constexpr double kVerdictAlpha = 0.05;        // two-sided level of the rank test
constexpr double kIntervalConfidence = 0.95;  // of the bootstrap interval
constexpr int kBootstrapResamples = 2000;
constexpr std::uint64_t kBootstrapSeed = 1;  // fixed: the same runs give the same report
constexpr int kMaxRunsPerArm = 1000;         // --runs' limit, for the advice

// One run's value of a metric. Below the measurement's resolution the true value is only known
// to be smaller than `value` (the resolution): it reads "<1", never 0, and ranks below every
// measured value.
struct RunValue {
  double value = 0;
  bool below_resolution = false;
};

struct ArmSummary {
  double median = 0;
  bool median_below_resolution = false;  // a middle value is below the resolution: median < `median`
  RunValue low;
  RunValue high;
};

// The median (mean of the middle two) and range of an arm's runs; zeros for none.
ArmSummary summarize_arm(const std::vector<RunValue>& runs);

enum class Better { lower, higher, unjudged };

struct Verdict {
  std::string word;    // "better", "worse", "no difference shown"; empty when not judged
  std::string reason;  // why it was not judged
  RankTest test;
  std::optional<double> ratio;  // median tuned / median observe
  // '<': the true ratio is below `ratio` (the tuned median is below the resolution); '>': above
  // it (the observe-only median is); 0: `ratio` is the ratio.
  char ratio_bound = 0;
  std::optional<Interval> interval;  // bootstrap interval of that ratio
  std::string advice;                // when the arms overlap: what more runs would show
};

// How the verdict's reasons and advice name the arms and the samples: the runs of `tcptune ab --
// CMD` (the default), or the steps of a fleet A/B read from Prometheus, which more of are had
// with a wider --window rather than more --runs.
struct VerdictWording {
  std::string observe_arm = "observe-only";
  std::string tuned_arm = "tuned";
  std::string sample = "run";  // one sample; "runs" is this with an "s"
  // What to do for `samples` per arm: "rerun with --runs 17".
  std::function<std::string(int samples)> more = [](int samples) {
    return "rerun with --runs " + std::to_string(samples);
  };
  std::string longer = "let each run last longer";  // when some samples had no value
  int most = kMaxRunsPerArm;                        // the most samples per arm there can be
};

Verdict judge(const std::vector<RunValue>& observe, const std::vector<RunValue>& tuned, Better better,
              const VerdictWording& wording = {});

}  // namespace tcptune::cli
