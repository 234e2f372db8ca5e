#include "ab_fleet.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <functional>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "ab_report.hpp"
#include "ab_results.hpp"
#include "ab_statistics.hpp"
#include "ab_table.hpp"
#include "cdf_plot.hpp"
#include "fleet_steps.hpp"
#include "observing_cost.hpp"
#include "program_launch.hpp"
#include "prometheus_api.hpp"
#include "svg_chart.hpp"
#include "tcptune/config/units.hpp"

namespace tcptune::cli {

namespace {

constexpr std::chrono::milliseconds kQueryTimeout{60'000};
constexpr double kAckResolutionMs = 1;      // the shim's ack sampler polls every millisecond
constexpr std::size_t kMostSteps = 11'000;  // Prometheus's limit of points per series
constexpr double kAutocorrelationWorthSaying = 0.3;

double seconds_of(const std::string& duration) {
  return std::chrono::duration<double>(config::parse_duration(duration).value()).count();
}

// "90s", "10m", "1h30m": a window or step as the command line takes it back.
std::string duration_words(double seconds) {
  const auto whole = static_cast<long long>(std::llround(seconds));
  if (std::fabs(seconds - static_cast<double>(whole)) > 1e-9) {
    return std::to_string(std::llround(seconds * 1000)) + "ms";
  }
  if (whole % 3600 == 0) {
    return std::to_string(whole / 3600) + "h";
  }
  if (whole % 60 == 0) {
    return std::to_string(whole / 60) + "m";
  }
  return std::to_string(whole) + "s";
}

std::string utc_text(double unix_s) {
  const auto when = static_cast<std::time_t>(unix_s);
  std::tm utc{};
  char text[32] = "";
  if (::gmtime_r(&when, &utc) != nullptr) {
    (void)std::strftime(text, sizeof text, "%Y-%m-%d %H:%M:%S UTC", &utc);
  }
  return text;
}

std::string number(double value) {
  char text[32];
  (void)std::snprintf(text, sizeof text, "%.4g", value);
  return text;
}

struct Window {
  double start = 0;  // the first step's end
  double end = 0;
  double step = 0;
  double length = 0;
  std::size_t steps = 0;
};

struct FleetArm {
  std::string value;     // the label's value
  std::string name;      // as the table says it: "off", "on"
  std::string selector;  // {label="value",...}
  ArmSteps steps;
  std::vector<std::string> queries;
};

class Fleet {
 public:
  Fleet(const AbOptions& options, PrometheusApi api, Window window)
      : options_(options), api_(std::move(api)), window_(window) {}

  // The label matchers every query shares, less the arm's.
  [[nodiscard]] std::string base_matchers() const {
    std::string matchers;
    if (!options_.program.empty()) {
      matchers += "program=" + promql_string(options_.program);
    }
    if (!options_.selector.empty()) {
      matchers += (matchers.empty() ? "" : ",") + options_.selector;
    }
    return matchers;
  }

  [[nodiscard]] std::string selector_of(const std::string& value) const {
    const std::string base = base_matchers();
    return "{" + options_.arm_label + "=" + promql_string(value) + (base.empty() ? "" : "," + base) + "}";
  }

  // The arms that have tcptune series in the window; empty with `error` when none is reachable.
  std::optional<std::vector<std::string>> arms_present(std::string& error) const {
    const std::string base = base_matchers();
    const std::string expression = "count by (" + options_.arm_label + ") (count_over_time(tcptune_connections_total{" +
                                   options_.arm_label + "!=\"\"" + (base.empty() ? "" : "," + base) + "}[" + range() +
                                   "]))";
    const auto series = api_.query(expression, window_.end, error);
    if (!series) {
      return std::nullopt;
    }
    std::vector<std::string> arms;
    for (const PromSeries& one : *series) {
      const auto found = one.labels.find(options_.arm_label);
      if (found != one.labels.end()) {
        arms.push_back(found->second);
      }
    }
    std::sort(arms.begin(), arms.end());
    return arms;
  }

  // Every query of one arm; false with `error` at the first that fails.
  bool fetch(FleetArm& arm, std::string& error) const {
    const std::string step = std::to_string(std::llround(window_.step * 1000)) + "ms";
    const auto increase = [&](const std::string& name) {
      return "increase(" + name + arm.selector + "[" + step + "])";
    };
    const std::vector<std::pair<std::string, CumulativeBuckets StepCounts::*>> histograms = {
        {"sum by (le) (" + increase("tcptune_write_latency_seconds_bucket") + ")", &StepCounts::write_latency},
        {"sum by (le) (" + increase("tcptune_ack_latency_seconds_bucket") + ")", &StepCounts::ack_latency},
    };
    const std::vector<std::pair<std::string, std::optional<double> StepCounts::*>> values = {
        {"sum(" + increase("tcptune_acks_before_first_poll_total") + ")", &StepCounts::acks_before_first_poll},
        {"sum(" + increase("tcptune_writes_total") + ")", &StepCounts::writes},
        {"sum(" + increase("tcptune_write_bytes_total") + ")", &StepCounts::bytes},
        {"sum(" + increase("tcptune_idle_restarts_total") + ")", &StepCounts::idle_restarts},
        {"sum(" + increase("tcptune_connections_total") + ")", &StepCounts::connections},
        {"sum(" + increase("tcptune_heartbeats_total") + ")", &StepCounts::heartbeats},
        {"sum(tcptune_processes" + arm.selector + ")", &StepCounts::processes},
    };
    for (const auto& [expression, field] : histograms) {
      arm.queries.push_back(expression);
      const auto series = api_.query_range(expression, window_.start, window_.end, window_.step, error);
      if (!series) {
        return false;
      }
      add_bucket_series(*series, field, arm.steps);
    }
    for (const auto& [expression, field] : values) {
      arm.queries.push_back(expression);
      const auto series = api_.query_range(expression, window_.start, window_.end, window_.step, error);
      if (!series) {
        return false;
      }
      add_value_series(*series, field, arm.steps);
    }
    return true;
  }

  [[nodiscard]] std::string range() const { return std::to_string(std::llround(window_.length * 1000)) + "ms"; }

 private:
  const AbOptions& options_;
  PrometheusApi api_;
  Window window_;
};

using StepExtract = std::function<std::optional<RunValue>(const StepCounts&)>;

struct FleetMetric {
  AbMetric metric;
  std::vector<double> off_in_time_order;  // for the autocorrelation note
  std::vector<double> on_in_time_order;
};

FleetMetric fleet_metric(const std::string& name, const std::string& unit, Better better, const FleetArm& off,
                         const FleetArm& on, const StepExtract& extract, const std::string& reason_if_none,
                         const VerdictWording& wording) {
  FleetMetric out;
  AbMetric& metric = out.metric;
  metric.name = name;
  metric.unit = unit;
  metric.better = better;
  for (const auto& [arm, values, ordered] : {std::tuple{&off, &metric.observe, &out.off_in_time_order},
                                             std::tuple{&on, &metric.tuned, &out.on_in_time_order}}) {
    for (const auto& [time, counts] : arm->steps) {
      if (std::optional<RunValue> value = extract(counts)) {
        values->push_back(*value);
        ordered->push_back(value->below_resolution ? 0 : value->value);
      }
    }
  }
  metric.verdict = judge(metric.observe, metric.tuned, better, wording);
  if ((metric.observe.empty() || metric.tuned.empty()) && better != Better::unjudged) {
    metric.verdict.reason = reason_if_none + (metric.observe.empty() && metric.tuned.empty() ? ""
                                              : metric.observe.empty() ? " in the " + off.name + " arm"
                                                                       : " in the " + on.name + " arm");
  }
  return out;
}

std::vector<FleetMetric> fleet_metrics(const FleetArm& off, const FleetArm& on, double step_s,
                                       const VerdictWording& wording) {
  const std::string no_write =
      "no write measured (no series, or no write in any step; supervised programs export connections and idle "
      "restarts only)";
  const std::string no_ack = "no write sampled for its ack";
  auto write = [](double p) {
    return [p](const StepCounts& c) { return step_percentile(p, c.write_latency, 0, 1e-6, 0); };
  };
  auto ack = [](double p) {
    return [p](const StepCounts& c) {
      return step_percentile(p, c.ack_latency, c.acks_before_first_poll.value_or(0), 1e-3, kAckResolutionMs);
    };
  };
  auto per = [](std::optional<double> StepCounts::*field, double divisor) {
    return [field, divisor](const StepCounts& c) -> std::optional<RunValue> {
      if (!(c.*field)) {
        return std::nullopt;
      }
      return RunValue{std::max(0.0, *(c.*field)) / divisor, false};
    };
  };
  return {
      fleet_metric("write p50", "us", Better::lower, off, on, write(50), no_write, wording),
      fleet_metric("write p99", "us", Better::lower, off, on, write(99), no_write, wording),
      fleet_metric("ack p50", "ms", Better::lower, off, on, ack(50), no_ack, wording),
      fleet_metric("ack p99", "ms", Better::lower, off, on, ack(99), no_ack, wording),
      fleet_metric("throughput", "MB/s", Better::higher, off, on, per(&StepCounts::bytes, step_s * 1e6),
                   "no byte written", wording),
      // Shown, not judged (as in the runs' ab): a count that follows the load and the idle gaps.
      fleet_metric("idle restarts", "/min", Better::unjudged, off, on, per(&StepCounts::idle_restarts, step_s / 60), "",
                   wording),
      fleet_metric("writes", "/s", Better::unjudged, off, on, per(&StepCounts::writes, step_s), "", wording),
      fleet_metric("connections", "/s", Better::unjudged, off, on, per(&StepCounts::connections, step_s), "", wording),
      fleet_metric("heartbeats", "/s", Better::unjudged, off, on, per(&StepCounts::heartbeats, step_s), "", wording),
      fleet_metric("processes", "", Better::unjudged, off, on, per(&StepCounts::processes, 1), "", wording),
  };
}

// Per judged metric whose steps are autocorrelated: how many independent steps they are worth.
std::vector<std::string> autocorrelation_notes(const std::vector<FleetMetric>& metrics, const FleetArm& off,
                                               const FleetArm& on) {
  std::vector<std::string> notes;
  for (const FleetMetric& fleet : metrics) {
    if (fleet.metric.verdict.word.empty()) {
      continue;
    }
    double worst = 0;
    std::string arm;
    std::size_t count = 0;
    for (const auto& [name, values] :
         {std::pair{&off.name, &fleet.off_in_time_order}, std::pair{&on.name, &fleet.on_in_time_order}}) {
      if (const std::optional<double> r = lag1_autocorrelation(*values); r && *r > worst) {
        worst = *r;
        arm = *name;
        count = values->size();
      }
    }
    if (worst < kAutocorrelationWorthSaying) {
      continue;
    }
    const double independent = static_cast<double>(count) * (1 - worst) / (1 + worst);
    notes.push_back(fleet.metric.name + ": successive steps of the " + arm +
                    " arm are correlated (lag-1 r = " + number(worst) + "): its " + std::to_string(count) +
                    " steps are worth about " + number(std::max(1.0, independent)) +
                    " independent ones, so its p-value is optimistic; a longer --step (and --window) gives steps "
                    "closer to independent");
  }
  return notes;
}

std::string escaped(const std::string& text) {
  return xml_escaped(text);
}

constexpr const char* kFleetMethod = R"(<p>Both arms ran at the same time, each exporting the shim's
metrics (the off arm observing: <code>tcptune run --observe</code>, which measures the same way and
sets no option). Each arm's samples are its values in the window's steps: the increase of each
counter and of each histogram bucket over the step, from what Prometheus scraped; the steps do not
overlap, so no scrape counts in two samples. A percentile of a step is Prometheus's
<code>histogram_quantile</code> over that step's buckets (bounds at powers of two, interpolated within
one); an ack acknowledged before the sampler's first poll ranks below every timed one and a percentile
among those reads &lt;1 ms.</p>
<ul>
<li><b>What a sample is</b>: one step of one arm, summed over its processes. Successive steps are not
independent (load and the network drift over minutes and hours): both arms share the same steps, so
such drift hits both alike, but the test treats the steps as independent, so its p-values are
optimistic when successive steps are correlated; a note says so, with the lag-1 autocorrelation and
about how many independent steps they are worth. Longer steps are closer to independent; decide on p
well below 0.05, and run an A/A comparison (both arms on one policy) first to see the fleet's
noise.</li>
<li><b>p</b>: two-sided Mann-Whitney U test of the on arm's steps against the off arm's, exact
without ties for up to 50 steps per arm, else the normal approximation with ties and continuity
corrections. <b>better</b> or <b>worse</b> at p &lt; 0.05, else <b>no difference shown</b>.</li>
<li><b>ratio</b>: median of the on arm's steps over the off arm's; the interval is a 95% percentile
bootstrap (2000 resamples, seed 1).</li>
<li><b>Throughput</b> compares only when both arms carry the same load (e.g. equal replicas behind one
Service); idle restarts, writes, connections and heartbeats, which follow the load, are shown, not
judged.</li>
<li><b>What observing costs</b>: the shim's own CPU time per write measured by
<code>bench_hook_overhead</code> (tcp_write_measured: 21 ns with the TSC write clock, 60 ns with
clock_gettime), applied to the off arm's write rate and median write call; the on arm pays the same.</li>
</ul>
)";

}  // namespace

int ab_fleet_command(const AbOptions& options) {
  std::string problem;
  const std::optional<HttpUrl> url = parse_http_url(options.prometheus, problem);
  if (!url) {
    (void)std::fprintf(stderr, "tcptune ab: --prometheus %s\n", problem.c_str());
    return kExitUsage;
  }
  Window window;
  window.step = seconds_of(options.step);
  window.length = seconds_of(options.window);
  window.end =
      options.end.empty()
          ? std::floor(std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count())
          : std::strtod(options.end.c_str(), nullptr);
  window.steps = static_cast<std::size_t>(std::floor(window.length / window.step + 1e-9));
  if (window.steps < 2) {
    (void)std::fprintf(stderr, "tcptune ab: --window %s holds fewer than two --step %s: no comparison\n",
                       options.window.c_str(), options.step.c_str());
    return kExitUsage;
  }
  if (window.steps > kMostSteps) {
    (void)std::fprintf(stderr,
                       "tcptune ab: --window %s holds %zu steps of %s; Prometheus answers at most %zu: use a longer "
                       "--step\n",
                       options.window.c_str(), window.steps, options.step.c_str(), kMostSteps);
    return kExitUsage;
  }
  window.length = static_cast<double>(window.steps) * window.step;
  window.start = window.end - window.length + window.step;
  if (std::string error; !make_out_directory(options.out, error)) {
    (void)std::fprintf(stderr, "tcptune ab: %s\n", error.c_str());
    return 1;
  }

  Fleet fleet(options, PrometheusApi(*url, kQueryTimeout), window);
  std::string error;
  const std::optional<std::vector<std::string>> present = fleet.arms_present(error);
  if (!present) {
    (void)std::fprintf(stderr, "tcptune ab: %s\n", error.c_str());
    return 1;
  }
  std::string found;
  for (const std::string& arm : *present) {
    found += (found.empty() ? "" : ", ") + arm;
  }
  std::vector<std::string> missing;
  for (const std::string* arm : {&options.off, &options.on}) {
    if (std::find(present->begin(), present->end(), *arm) == present->end()) {
      missing.push_back(*arm);
    }
  }
  if (!missing.empty()) {
    const std::string base = fleet.base_matchers();
    (void)std::fprintf(
        stderr,
        "tcptune ab: no tcptune series with %s=\"%s\"%s in Prometheus at %s over the %s before %s (arms found: %s); is "
        "that arm's textfile scraped, and does it run with TCPTUNE_ARM=%s (tcptune run --arm %s)?\n",
        options.arm_label.c_str(), missing.front().c_str(), base.empty() ? "" : (" and " + base).c_str(),
        url_text(*url).c_str(), duration_words(window.length).c_str(), utc_text(window.end).c_str(),
        found.empty() ? "none" : found.c_str(), missing.front().c_str(), missing.front().c_str());
    return 1;
  }
  FleetArm off{options.off, options.off, fleet.selector_of(options.off), {}, {}};
  FleetArm on{options.on, options.on, fleet.selector_of(options.on), {}, {}};
  for (FleetArm* arm : {&off, &on}) {
    if (!fleet.fetch(*arm, error)) {
      (void)std::fprintf(stderr, "tcptune ab: %s\n", error.c_str());
      return 1;
    }
  }

  VerdictWording wording;
  wording.observe_arm = off.name;
  wording.tuned_arm = on.name;
  wording.sample = "step";
  wording.more = [step = window.step](int steps) {
    return "use a --window of " + std::to_string(steps) + " steps (" +
           duration_words(static_cast<double>(steps) * step) + ")";
  };
  wording.longer = "a longer --step";
  wording.most = static_cast<int>(kMostSteps);
  const std::vector<FleetMetric> metrics = fleet_metrics(off, on, window.step, wording);

  AbResults results;
  results.observe = {off.name, options.arm_label + "=\"" + off.value + "\" (observing)", ""};
  results.tuned = {on.name, options.arm_label + "=\"" + on.value + "\"", ""};
  for (AbArm* arm : {&results.observe, &results.tuned}) {
    const FleetArm& from = arm == &results.observe ? off : on;
    for (const std::string& query : from.queries) {
      arm->policy_text += query + "\n";
    }
  }
  results.runs_requested = static_cast<int>(window.steps);
  results.ratio_label = on.name + "/" + off.name;
  results.heading = "fleet A/B from " + url_text(*url) + ": " + std::to_string(window.steps) + " steps of " +
                    duration_words(window.step) + " per arm from " + utc_text(window.end - window.length) + " to " +
                    utc_text(window.end) + " (" + options.arm_label + "=\"" + on.value + "\" vs \"" + off.value +
                    "\"); median [min-max] across steps; " + results.ratio_label +
                    ": ratio of medians [95% bootstrap interval]; p: Mann-Whitney U, two-sided, steps taken as "
                    "independent; verdict at p < 0.05";
  std::vector<std::string> words = {"tcptune",      "ab",
                                    "--prometheus", url_text(*url),
                                    "--arm-label",  options.arm_label,
                                    "--on",         on.value,
                                    "--off",        off.value,
                                    "--window",     duration_words(window.length),
                                    "--step",       duration_words(window.step),
                                    "--end",        api_seconds(window.end)};
  if (!options.program.empty()) {
    words.insert(words.end(), {"--program", options.program});
  }
  if (!options.selector.empty()) {
    words.insert(words.end(), {"--selector", options.selector});
  }
  const std::string out = absolute(options.out);
  words.insert(words.end(), {"--out", out});
  results.invocation = shell_words(words);
  results.command = std::vector<std::string>(words.begin() + 2, words.end());  // what follows "tcptune ab"
  for (const FleetMetric& metric : metrics) {
    results.metrics.push_back(metric.metric);
  }
  // What observing costs the off arm, beside the verdicts.
  const auto median_of_metric = [&](const std::string& name) {
    for (const AbMetric& metric : results.metrics) {
      if (metric.name == name && !metric.observe.empty()) {
        return summarize_arm(metric.observe).median;
      }
    }
    return 0.0;
  };
  const double off_writes = median_of_metric("writes");
  const double off_write_p50 = median_of_metric("write p50");
  results.beside.push_back(observing_cost_line(off.name, off_writes, off_write_p50));
  results.notes = autocorrelation_notes(metrics, off, on);
  for (const FleetArm* arm : {&off, &on}) {
    std::size_t with_writes = 0;
    for (const auto& [time, counts] : arm->steps) {
      with_writes += counts.writes ? 1 : 0;
    }
    if (with_writes < window.steps) {
      results.notes.push_back(arm->name + " arm: " + std::to_string(window.steps - with_writes) + " of the " +
                              std::to_string(window.steps) +
                              " steps have no writes series (before its processes started, after they ended, or "
                              "fewer than two scrapes in the step)");
    }
  }

  const std::string shown = url_text(*url);
  const std::string arms = off.name + " (observing) vs " + on.name;
  auto title = [&](const std::string& what) {
    return std::vector<std::string>{
        what, "fleet A/B: " + shown + ", " + duration_words(window.length) + " to " + utc_text(window.end), arms};
  };
  const MergedHistogram off_writes_hist = merged_histogram(off.steps, &StepCounts::write_latency);
  const MergedHistogram on_writes_hist = merged_histogram(on.steps, &StepCounts::write_latency);
  const MergedHistogram off_acks = merged_histogram(off.steps, &StepCounts::ack_latency);
  const MergedHistogram on_acks = merged_histogram(on.steps, &StepCounts::ack_latency);
  const auto below = [](const ArmSteps& steps) {
    double total = 0;
    for (const auto& [time, counts] : steps) {
      total += std::max(0.0, counts.acks_before_first_poll.value_or(0));
    }
    return static_cast<std::uint64_t>(std::llround(total));
  };
  results.plots.push_back(write_cdf_plot(out, "write-latency-cdf",
                                         {title("Write-call latency, the whole window"),
                                          "write-call latency",
                                          "writes",
                                          0,
                                          {cdf_of_histogram(off.name, off_writes_hist, 0, "no write measured"),
                                           cdf_of_histogram(on.name, on_writes_hist, 0, "no write measured")}}));
  results.plots.push_back(
      write_cdf_plot(out, "ack-latency-cdf",
                     {title("Ack latency (write to peer's ack), the whole window"),
                      "ack latency",
                      "sampled writes",
                      kAckResolutionMs,
                      {cdf_of_histogram(off.name, off_acks, below(off.steps), "no write sampled for its ack"),
                       cdf_of_histogram(on.name, on_acks, below(on.steps), "no write sampled for its ack")}}));
  results.intro_html = "<p>Two arms of a fleet, already running, read from Prometheus at <code>" + escaped(shown) +
                       "</code>: <code>" + escaped(on.selector) + "</code> (on) against <code>" +
                       escaped(off.selector) + "</code> (off, observing), " + std::to_string(window.steps) +
                       " steps of " + duration_words(window.step) + " per arm from " +
                       utc_text(window.end - window.length) + " to " + utc_text(window.end) +
                       ". The queries of each arm are under Arms.</p>\n";
  results.method_html = kFleetMethod;

  (void)std::fputs(ab_table(results).c_str(), stdout);
  nlohmann::json queries = nlohmann::json::object();
  queries[off.name] = off.queries;
  queries[on.name] = on.queries;
  nlohmann::json step_times = nlohmann::json::object();  // the steps' ends that had any series, per arm
  for (const FleetArm* arm : {&off, &on}) {
    step_times[arm->name] = nlohmann::json::array();
    for (const auto& [time, counts] : arm->steps) {
      step_times[arm->name].push_back(time);
    }
  }
  const nlohmann::json more = {
      {"source",
       {{"prometheus", shown},
        {"arm_label", options.arm_label},
        {"on", {{"value", on.value}, {"selector", on.selector}}},
        {"off", {{"value", off.value}, {"selector", off.selector}}},
        {"window_s", window.length},
        {"step_s", window.step},
        {"start", window.end - window.length},
        {"end", window.end},
        {"queries", queries},
        {"step_times", step_times}}},
      {"runs_per_arm", nullptr},
      {"steps_per_arm", window.steps},
      {"observing_cost",
       {{"arm", off.name},
        {"write_cost_ns", {kMeasuredWriteCostTscNs, kMeasuredWriteCostClockGettimeNs}},
        {"write_cost_from", "bench_hook_overhead tcp_write_measured (TSC, clock_gettime write clock)"},
        {"median_writes_per_s", off_writes},
        {"median_write_p50_us", off_write_p50},
        {"line", results.beside.front()}}},
      {"statistics",
       {{"test", "Mann-Whitney U, two-sided, over steps taken as independent"},
        {"alpha", kVerdictAlpha},
        {"exact_up_to_steps", kExactMaxSize},
        {"interval", "percentile bootstrap of the ratio of medians"},
        {"confidence", kIntervalConfidence},
        {"resamples", kBootstrapResamples},
        {"seed", kBootstrapSeed}}}};
  if (write_ab_report(out, results, error, &more)) {
    std::printf("report: %s/report.html; summary: %s/summary.txt, %s/summary.json; plots in %s\n", out.c_str(),
                out.c_str(), out.c_str(), out.c_str());
  } else {
    (void)std::fprintf(stderr, "tcptune ab: the report was not written: %s\n", error.c_str());
  }
  (void)std::fflush(stdout);
  return !error.empty() ? 1 : 0;
}

}  // namespace tcptune::cli
