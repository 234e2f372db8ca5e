#include "ab_verdict.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace tcptune::cli {

namespace {

// Below the resolution ranks below every measured value, tied with the others below it.
double rank_value(const RunValue& run) {
  return run.below_resolution ? 0 : run.value;
}

std::vector<double> rank_values(const std::vector<RunValue>& runs) {
  std::vector<double> values;
  values.reserve(runs.size());
  for (const RunValue& run : runs) {
    values.push_back(rank_value(run));
  }
  return values;
}

std::string format(const char* pattern, double value) {
  char text[64];
  (void)std::snprintf(text, sizeof text, pattern, value);
  return text;
}

std::string percent(double fraction) {
  return format("%.0f%%", fraction * 100);
}

std::string runs_advice(const std::vector<double>& observe, const std::vector<double>& tuned,
                        const std::optional<double>& ratio, const VerdictWording& wording) {
  const auto zero = [](double value) { return value == 0; };
  const std::string samples = wording.sample + "s";
  if (std::all_of(observe.begin(), observe.end(), zero) && std::all_of(tuned.begin(), tuned.end(), zero)) {
    return "every " + wording.sample +
           " of both arms was below the resolution: this measurement cannot tell them apart";
  }
  const std::size_t runs = std::min(observe.size(), tuned.size());
  const std::string with = observe.size() == tuned.size()
                               ? std::to_string(runs) + " " + (runs == 1 ? wording.sample : samples) + " per arm"
                               : std::to_string(observe.size()) + " " + wording.observe_arm + " and " +
                                     std::to_string(tuned.size()) + " " + wording.tuned_arm + " " + samples +
                                     " with a value";
  const int fewest = fewest_runs_for(kVerdictAlpha);
  const std::optional<double> sd = pooled_log_sd(observe, tuned);
  std::optional<int> to_show;
  if (sd && ratio) {
    to_show = runs_to_show(*sd, *ratio, kVerdictAlpha, wording.most);
  }
  const double smallest = smallest_p_value(observe.size(), tuned.size());
  if (smallest >= kVerdictAlpha) {
    const std::string because =
        "with " + with + " no difference can be shown (the smallest p-value possible is " + format("%.2g", smallest) + ")";
    if (observe.size() != tuned.size() && runs > 0) {
      // Some samples had no value (too short to sample one): scale them by the share that had.
      const std::size_t most = std::max(observe.size(), tuned.size());
      const std::size_t scaled = (most * static_cast<std::size_t>(fewest) + runs - 1) / runs;
      return because + "; only " + std::to_string(runs) + " of one arm's " + samples +
             " had a value: " + wording.more(static_cast<int>(std::max(scaled, most + 1))) + ", or " + wording.longer;
    }
    return because + "; " + wording.more(std::max(fewest + 1, to_show.value_or(0)));
  }
  if (!sd) {
    return "arms overlap; values below the resolution give no estimate of the " + samples + " needed";
  }
  if (*sd < 1e-9) {  // equal but for rounding
    return "every " + wording.sample + " gave the same value in both arms: no difference to show";
  }
  std::string advice = "arms overlap; with " + with + " a difference of " +
                       percent(detectable_difference(*sd, static_cast<int>(runs), kVerdictAlpha)) +
                       " would be shown (80% of the time)";
  if (to_show && static_cast<std::size_t>(*to_show) > runs) {
    advice += "; " + wording.more(*to_show) + " to show the ratio seen here (" + format("%.3g", *ratio) + ")";
  } else if (ratio && !to_show) {
    advice += "; the ratio seen here (" + format("%.3g", *ratio) + ") is too close to 1 to show within " +
              std::to_string(wording.most) + " " + samples;
  }
  return advice;
}

}  // namespace

ArmSummary summarize_arm(const std::vector<RunValue>& runs) {
  ArmSummary summary;
  if (runs.empty()) {
    return summary;
  }
  std::vector<RunValue> sorted = runs;
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const RunValue& a, const RunValue& b) { return rank_value(a) < rank_value(b); });
  const RunValue& upper = sorted[sorted.size() / 2];
  const RunValue& lower = sorted[(sorted.size() - 1) / 2];
  summary.median = (lower.value + upper.value) / 2;
  summary.median_below_resolution = lower.below_resolution || upper.below_resolution;
  summary.low = sorted.front();
  summary.high = sorted.back();
  return summary;
}

Verdict judge(const std::vector<RunValue>& observe, const std::vector<RunValue>& tuned, Better better,
              const VerdictWording& wording) {
  Verdict verdict;
  if (better == Better::unjudged) {
    return verdict;
  }
  if (observe.empty() || tuned.empty()) {
    verdict.reason = std::string("no value in ") + (observe.empty() && tuned.empty() ? "either arm"
                                                    : observe.empty() ? "the " + wording.observe_arm + " arm"
                                                                      : "the " + wording.tuned_arm + " arm");
    return verdict;
  }
  const std::vector<double> observe_values = rank_values(observe);
  const std::vector<double> tuned_values = rank_values(tuned);
  const ArmSummary observe_summary = summarize_arm(observe);
  const ArmSummary tuned_summary = summarize_arm(tuned);
  // With one median below the resolution the ratio is a bound; with both, unknown.
  if (observe_summary.median > 0 &&
      !(observe_summary.median_below_resolution && tuned_summary.median_below_resolution)) {
    verdict.ratio = tuned_summary.median / observe_summary.median;
    verdict.ratio_bound = tuned_summary.median_below_resolution     ? '<'
                          : observe_summary.median_below_resolution ? '>'
                                                                    : '\0';
  }
  verdict.interval =
      bootstrap_median_ratio(tuned_values, observe_values, kIntervalConfidence, kBootstrapResamples, kBootstrapSeed);
  verdict.test = mann_whitney_u(tuned_values, observe_values);
  if (verdict.test.p_value < kVerdictAlpha) {
    const bool tuned_higher = verdict.test.u > static_cast<double>(tuned.size() * observe.size()) / 2;
    verdict.word = tuned_higher == (better == Better::higher) ? "better" : "worse";
    return verdict;
  }
  verdict.word = "no difference shown";
  verdict.advice = runs_advice(observe_values, tuned_values, verdict.ratio, wording);
  return verdict;
}

}  // namespace tcptune::cli
