// tcptune ab [--runs N] [--policy FILE] [--out DIR] -- CMD ARGS...
// Runs CMD alternately under the observe-only policy (observe_policy.hpp, as under `tcptune run
// --observe`: the shim measures, changes nothing) and
// under the given policy, so both arms are measured the same way; prints a verdict per metric
// and keeps in DIR every run's log and latencies, the summary (text and JSON), the plots, and
// report.html with all of it.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "ab_fleet.hpp"
#include "ab_report.hpp"
#include "ab_results.hpp"
#include "ab_table.hpp"
#include "cdf_plot.hpp"
#include "child_deadline.hpp"
#include "commands.hpp"
#include "log_summary.hpp"
#include "observe_policy.hpp"
#include "program_exit.hpp"
#include "program_launch.hpp"
#include "request_latency_file.hpp"
#include "run_policy.hpp"
#include "tcptune/config/policy_loader.hpp"
#include "tcptune/config/units.hpp"
#include "wall_time_plot.hpp"

namespace tcptune::cli {

namespace {

// The built-in default (TCP_NODELAY on) as a policy, so that both arms name a file.
constexpr const char* kBuiltinPolicy = "version = 1\n[defaults]\nnodelay = \"on-wait\"\n";
// The shim's ack sampler polls every millisecond (docs/records-and-metrics.md, Ack latency).
constexpr double kAckResolutionMs = 1;

struct RunResult {
  int status = 0;
  bool timed_out = false;  // stopped at --run-timeout
  double wall_s = 0;
  LogSummary summary;
  RequestLatencies latencies;
};

struct Arm {
  std::string name;         // as the table and report say it
  std::string file_prefix;  // of its runs' files: observe-1.jsonl, tuned-1.latency
  std::string policy;       // the file, as records name it
  std::string policy_text;  // its text as validated, which every run gets (run_policy.hpp)
  std::vector<RunResult> runs;
  ConnectionGroup merged;  // every run's connections, for the CDFs
  std::vector<double> request_ms;
};

RunResult run_once(const std::string& resolved, std::vector<char*> argv, const Arm& arm, const std::string& log,
                   const std::string& latency_file, std::optional<double> timeout_s) {
  if (!put_policy_text_in_environment(arm.policy_text, arm.policy)) {
    setenv("TCPTUNE_POLICY", arm.policy.c_str(), 1);  // over 64 KiB: ab's copy, read by each process
    unsetenv("TCPTUNE_POLICY_TOML");
    unsetenv("TCPTUNE_POLICY_NAME");
  }
  setenv("TCPTUNE_LOG", log.c_str(), 1);
  setenv("TCPTUNE_LOG_FORMAT", "jsonl", 1);
  (void)::unlink(log.c_str());
  // Empty and present, so that the program may append to it as soon as it starts.
  std::ofstream(latency_file, std::ios::trunc).close();
  setenv(kLatencyFileVariable, latency_file.c_str(), 1);
  RunResult result;
  const auto start = std::chrono::steady_clock::now();
  ChildHooks hooks;
  if (timeout_s) {
    hooks.wait = [&](pid_t child) {
      const DeadlineWait waited = wait_with_deadline(child, *timeout_s);
      result.timed_out = waited.timed_out;
      return waited.status;
    };
  }
  result.status = run_child(resolved, argv, hooks);
  result.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::string error;
  summarize_logs({log}, "rule", result.summary, error);
  result.latencies = read_request_latencies(latency_file);
  return result;
}

std::string basename_of(const std::string& path) {
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// Nearest rank, as MergedHistogram::percentile_us, over the timed buckets after the samples
// below the resolution; none without a sample.
std::optional<RunValue> histogram_percentile_ms(const MergedHistogram& histogram, double p, double resolution_ms) {
  std::uint64_t total = histogram.below_resolution;
  for (const auto& [bounds, count] : histogram.buckets) {
    total += count;
  }
  if (total == 0) {
    return std::nullopt;
  }
  const double wanted = p / 100.0 * static_cast<double>(total);
  auto rank = static_cast<std::uint64_t>(wanted);
  if (static_cast<double>(rank) < wanted || rank == 0) {
    ++rank;
  }
  if (rank <= histogram.below_resolution) {
    return RunValue{resolution_ms, true};
  }
  std::uint64_t seen = histogram.below_resolution;
  for (const auto& [bounds, count] : histogram.buckets) {
    seen += count;
    if (seen >= rank) {
      const auto [low, high] = bounds;  // ns; reported as the shim reports a bucket: 2ab/(a+b)
      const double value_us = low + high > 0 ? 2 * low * high / (low + high) / 1000.0 : 0;
      return RunValue{std::min(value_us, histogram.max_us) / 1000.0, false};
    }
  }
  return RunValue{histogram.max_us / 1000.0, false};
}

std::optional<RunValue> values_percentile(std::vector<double> values, double p) {
  if (values.empty()) {
    return std::nullopt;
  }
  std::sort(values.begin(), values.end());
  const auto rank = static_cast<std::size_t>(std::ceil(p / 100.0 * static_cast<double>(values.size())));
  return RunValue{values[std::clamp<std::size_t>(rank, 1, values.size()) - 1], false};
}

using Extract = std::function<std::optional<RunValue>(const RunResult&)>;

AbMetric metric_of(const std::string& name, const std::string& unit, Better better, const Arm& observe,
                   const Arm& tuned, const Extract& extract, const std::string& reason_if_none) {
  AbMetric metric;
  metric.name = name;
  metric.unit = unit;
  metric.better = better;
  for (auto [arm, values] : {std::pair{&observe, &metric.observe}, std::pair{&tuned, &metric.tuned}}) {
    for (const RunResult& run : arm->runs) {
      if (std::optional<RunValue> value = extract(run)) {
        values->push_back(*value);
      }
    }
  }
  metric.verdict = judge(metric.observe, metric.tuned, better);
  if ((metric.observe.empty() || metric.tuned.empty()) && better != Better::unjudged) {
    metric.verdict.reason = reason_if_none + (metric.observe.empty() && metric.tuned.empty() ? ""
                                              : metric.observe.empty() ? " in the " + observe.name + " arm"
                                                                       : " in the " + tuned.name + " arm");
  }
  return metric;
}

std::vector<AbMetric> metrics_of(const Arm& observe, const Arm& tuned) {
  const std::string no_latency =
      "the program handed over no latency (one a line, appended to the file TCPTUNE_AB_LATENCY_FILE names)";
  const std::string no_write = "no write measured (no TCP connection under the shim, or supervised)";
  const std::string no_ack = "no write sampled for its ack";
  auto request = [](double p) { return [p](const RunResult& r) { return values_percentile(r.latencies.ms, p); }; };
  auto write = [](double p) {
    return [p](const RunResult& r) -> std::optional<RunValue> {
      const MergedHistogram& histogram = r.summary.total.write_latency;
      if (histogram.buckets.empty()) {
        return std::nullopt;
      }
      return RunValue{histogram.percentile_us(p), false};
    };
  };
  auto ack = [](double p) {
    return
        [p](const RunResult& r) { return histogram_percentile_ms(r.summary.total.ack_latency, p, kAckResolutionMs); };
  };
  auto count = [](std::uint64_t telemetry::ConnectionCounters::*field) {
    return [field](const RunResult& r) {
      return std::optional<RunValue>(RunValue{static_cast<double>(r.summary.total.counters.*field), false});
    };
  };
  return {
      metric_of(
          "wall time", "s", Better::lower, observe, tuned,
          [](const RunResult& r) {
            return std::optional<RunValue>(RunValue{r.wall_s, false});
          },
          ""),
      metric_of("request p50", "ms", Better::lower, observe, tuned, request(50), no_latency),
      metric_of("request p99", "ms", Better::lower, observe, tuned, request(99), no_latency),
      metric_of("write p50", "us", Better::lower, observe, tuned, write(50), no_write),
      metric_of("write p99", "us", Better::lower, observe, tuned, write(99), no_write),
      metric_of("ack p50", "ms", Better::lower, observe, tuned, ack(50), no_ack),
      metric_of("ack p99", "ms", Better::lower, observe, tuned, ack(99), no_ack),
      metric_of(
          "throughput", "MB/s", Better::higher, observe, tuned,
          [](const RunResult& r) -> std::optional<RunValue> {
            if (r.summary.total.counters.bytes == 0 || r.wall_s <= 0) {
              return std::nullopt;
            }
            return RunValue{static_cast<double>(r.summary.total.counters.bytes) / r.wall_s / 1e6, false};
          },
          "no byte written"),
      metric_of("idle restarts", "", Better::unjudged, observe, tuned,
                count(&telemetry::ConnectionCounters::idle_restarts), ""),
      metric_of("heartbeats", "", Better::unjudged, observe, tuned, count(&telemetry::ConnectionCounters::heartbeats),
                ""),
      metric_of("writes", "", Better::unjudged, observe, tuned, count(&telemetry::ConnectionCounters::writes), ""),
      metric_of(
          "connections", "", Better::unjudged, observe, tuned,
          [](const RunResult& r) {
            return std::optional<RunValue>(RunValue{static_cast<double>(r.summary.total.connections), false});
          },
          ""),
  };
}

std::vector<AbPlot> plots_of(const std::string& out, const std::vector<std::string>& command, const Arm& observe,
                             const Arm& tuned) {
  std::string shown = shell_words(command);
  if (shown.size() > 110) {  // what fits the plot's width
    shown = shown.substr(0, 107) + "...";
  }
  const std::string arms =
      observe.name + ": " + basename_of(observe.policy) + "  vs  " + tuned.name + ": " + basename_of(tuned.policy);
  auto title = [&](const std::string& what) { return std::vector<std::string>{what, "command: " + shown, arms}; };
  std::vector<AbPlot> plots;
  std::vector<WallTimeColumn> columns;
  for (const Arm* arm : {&observe, &tuned}) {
    WallTimeColumn& column = columns.emplace_back();
    column.name = arm->name + ": " + basename_of(arm->policy);
    for (const RunResult& run : arm->runs) {
      column.seconds.push_back(run.wall_s);
    }
  }
  plots.push_back(write_wall_time_plot(out, "wall-time", title("Wall time per run"), columns));
  const std::string no_latency = "the program handed over no latency (TCPTUNE_AB_LATENCY_FILE)";
  plots.push_back(write_cdf_plot(out, "request-latency-cdf",
                                 {title("Request latency, all runs"),
                                  "request latency",
                                  "requests",
                                  0,
                                  {cdf_of_values(observe.name, observe.request_ms, no_latency),
                                   cdf_of_values(tuned.name, tuned.request_ms, no_latency)}}));
  const std::string no_write = "no write measured";
  plots.push_back(write_cdf_plot(out, "write-latency-cdf",
                                 {title("Write-call latency, all runs"),
                                  "write-call latency",
                                  "writes",
                                  0,
                                  {cdf_of_histogram(observe.name, observe.merged.write_latency, 0, no_write),
                                   cdf_of_histogram(tuned.name, tuned.merged.write_latency, 0, no_write)}}));
  const std::string no_ack = "no write sampled for its ack";
  plots.push_back(write_cdf_plot(
      out, "ack-latency-cdf",
      {title("Ack latency (write to peer's ack), all runs"),
       "ack latency",
       "sampled writes",
       kAckResolutionMs,
       {cdf_of_histogram(observe.name, observe.merged.ack_latency, observe.merged.ack_latency.below_resolution, no_ack),
        cdf_of_histogram(tuned.name, tuned.merged.ack_latency, tuned.merged.ack_latency.below_resolution, no_ack)}}));
  return plots;
}

std::string invocation_of(const AbOptions& options, const std::string& out) {
  std::vector<std::string> words = {"tcptune", "ab", "--runs", std::to_string(options.runs)};
  if (!options.policy.empty()) {
    words.insert(words.end(), {"--policy", options.policy});
  }
  if (!options.run_timeout.empty()) {
    words.insert(words.end(), {"--run-timeout", options.run_timeout});
  }
  words.insert(words.end(), {"--out", out, "--"});
  words.insert(words.end(), options.command.begin(), options.command.end());
  return shell_words(words);
}

}  // namespace

int ab_command(const AbOptions& options) {
  if (!options.prometheus.empty()) {
    return ab_fleet_command(options);
  }
  const int runs = options.runs;
  std::optional<double> timeout_s;
  if (!options.run_timeout.empty()) {  // validated by the command line
    timeout_s = std::chrono::duration<double>(config::parse_duration(options.run_timeout).value()).count();
  }
  const std::string& policy = options.policy;
  std::string out = options.out;
  const std::vector<std::string>& args = options.command;
  std::string policy_text = kBuiltinPolicy;
  if (!policy.empty()) {
    std::variant<std::string, config::PolicyError> read = config::read_policy_file(policy);
    const config::LoadResult loaded =
        read.index() == 0 ? config::load_policy_text(std::get<0>(read), policy) : config::LoadResult{std::get<1>(read)};
    if (!loaded.ok()) {
      (void)std::fprintf(stderr, "tcptune: %s\n", loaded.error().to_string().c_str());
      return kExitConfig;
    }
    policy_text = std::get<0>(std::move(read));
  }
  std::string problem;
  const std::string shim = locate_preloadable_shim(problem);
  if (shim.empty()) {
    (void)std::fprintf(stderr, "tcptune ab: %s\n", problem.c_str());
    return 1;
  }
  bool found_not_executable = false;
  const std::string resolved = resolve_command(args[0], found_not_executable);
  if (resolved.empty()) {
    (void)std::fprintf(stderr, "tcptune ab: %s: %s\n", args[0].c_str(),
                       found_not_executable ? "permission denied" : "command not found");
    return found_not_executable ? 126 : 127;
  }
  // Before any run: a run whose log cannot be written measures nothing.
  if (std::string error; !make_out_directory(out, error)) {
    (void)std::fprintf(stderr, "tcptune ab: %s\n", error.c_str());
    return 1;
  }
  out = absolute(out);
  const std::string observe_policy = out + "/observe-only.toml";
  std::ofstream(observe_policy) << kObservePolicyText;
  // The given policy, or the built-in default (nodelay "on-wait"), written out so both arms
  // name a policy file; one too large for the environment is copied here as validated, so
  // that an edit of FILE during the runs reaches none of them.
  std::string tuned_policy = policy.empty() ? out + "/builtin-default.toml" : absolute(policy);
  if (policy.empty()) {
    std::ofstream(tuned_policy) << kBuiltinPolicy;
  } else if (policy_text.size() > kMaxPolicyInEnvironment || policy_text.find('\0') != std::string::npos) {
    tuned_policy = out + "/tuned-policy.toml";
    std::ofstream(tuned_policy, std::ios::binary) << policy_text;
  }
  setenv("LD_PRELOAD", preload_with_shim_first(shim, std::getenv("LD_PRELOAD")).c_str(), 1);
  std::vector<char*> argv;
  argv.reserve(args.size() + 1);
  for (const std::string& arg : args) {
    argv.push_back(const_cast<char*>(arg.c_str()));
  }
  argv.push_back(nullptr);

  Arm observe{"observe-only", "observe", observe_policy, kObservePolicyText, {}, {}, {}};
  Arm tuned{"tuned", "tuned", tuned_policy, policy_text, {}, {}, {}};
  AbResults results;
  results.command = args;
  results.invocation = invocation_of(options, out);
  results.runs_requested = runs;
  int failures = 0;
  // A run killed by a signal (Ctrl-C, SIGTERM passed on, a crash) is the last: the table shows
  // the runs so far, and ab then dies by that signal, as a parent waiting on it expects.
  std::optional<int> killed;
  for (int run = 1; run <= runs && !killed; ++run) {
    for (Arm* arm : {&observe, &tuned}) {  // interleaved: drift hits both arms alike
      const std::string stem = arm->file_prefix + "-" + std::to_string(run);
      std::string path = out;
      path += "/" + stem;
      RunResult result = run_once(resolved, argv, *arm, path + ".jsonl", path + ".latency", timeout_s);
      AbRun& record = results.runs.emplace_back();
      record.arm = arm->name;
      record.run = run;
      record.wall_s = result.wall_s;
      record.log = stem + ".jsonl";
      record.latency_file = stem + ".latency";
      record.requests = result.latencies.ms.size();
      record.bad_latency_lines = result.latencies.bad_lines;
      record.first_bad_latency_line = result.latencies.first_bad;
      record.failed = result.status != 0;
      if (result.timed_out) {
        // Stopped by ab itself: counted failed, and the runs go on.
        record.outcome = "timed out after " + options.run_timeout + ", stopped";
        (void)std::fprintf(stderr, "tcptune ab: run %d/%d %-8s %s, %.3f s\n", run, runs, arm->file_prefix.c_str(),
                           record.outcome.c_str(), result.wall_s);
      } else if (WIFSIGNALED(result.status)) {
        record.outcome = "killed by signal " + std::to_string(WTERMSIG(result.status)) + " (" +
                         strsignal(WTERMSIG(result.status)) + ")";
        (void)std::fprintf(stderr, "tcptune ab: run %d/%d %-8s %s, %.3f s; no more runs\n", run, runs,
                           arm->file_prefix.c_str(), record.outcome.c_str(), result.wall_s);
        killed = result.status;
      } else {
        record.outcome = "exit " + std::to_string(shell_exit_status(result.status));
        (void)std::fprintf(stderr, "tcptune ab: run %d/%d %-8s %s, %.3f s\n", run, runs, arm->file_prefix.c_str(),
                           record.outcome.c_str(), result.wall_s);
      }
      if (result.latencies.bad_lines > 0) {
        results.notes.push_back(arm->name + " run " + std::to_string(run) + ": " +
                                std::to_string(result.latencies.bad_lines) + " line(s) of " + record.latency_file +
                                " not a latency, left out (first: " + result.latencies.first_bad + ")");
      }
      failures += result.status != 0 ? 1 : 0;
      arm->merged.merge(result.summary.total);
      arm->request_ms.insert(arm->request_ms.end(), result.latencies.ms.begin(), result.latencies.ms.end());
      arm->runs.push_back(std::move(result));
      if (killed) {
        break;
      }
    }
  }
  if (failures != 0) {
    results.notes.push_back(std::to_string(failures) +
                            " run(s) failed (see Runs); their values are in the table as measured");
  }
  results.observe = {observe.name, observe.policy, observe.policy_text};
  results.tuned = {tuned.name, tuned.policy, tuned.policy_text};
  results.metrics = metrics_of(observe, tuned);
  results.plots = plots_of(out, args, observe, tuned);
  (void)std::fputs(ab_table(results).c_str(), stdout);
  std::string error;
  if (write_ab_report(out, results, error)) {
    std::printf("report: %s/report.html; summary: %s/summary.txt, %s/summary.json; plots and logs in %s\n", out.c_str(),
                out.c_str(), out.c_str(), out.c_str());
  } else {
    (void)std::fprintf(stderr, "tcptune ab: the report was not written: %s\n", error.c_str());
  }
  (void)std::fflush(stdout);
  if (killed) {
    return end_as_program(*killed);
  }
  if (failures != 0) {
    (void)std::fprintf(stderr, "tcptune ab: %d run(s) exited non-zero\n", failures);
    return 1;
  }
  return !error.empty() ? 1 : 0;
}

}  // namespace tcptune::cli
