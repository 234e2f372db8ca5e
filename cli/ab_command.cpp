// tcptune ab [--runs N] [--policy FILE] [--out DIR] -- CMD ARGS...
// Runs CMD alternately under the observe-only policy (observe_policy.hpp: the shim measures,
// changes nothing, as under `tcptune run --observe`) and under the given policy, so both arms
// are measured the same way; prints both side by side and writes the raw logs and a write/ack
// latency CDF plot to DIR.
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "ab_table.hpp"
#include "cdf_plot.hpp"
#include "commands.hpp"
#include "log_summary.hpp"
#include "observe_policy.hpp"
#include "program_exit.hpp"
#include "program_launch.hpp"
#include "run_policy.hpp"
#include "tcptune/config/policy_loader.hpp"

namespace tcptune::cli {

namespace {

// The built-in default (TCP_NODELAY on) as a policy, so that both arms name a file.
constexpr const char* kBuiltinPolicy = "version = 1\n[defaults]\nnodelay = \"on-wait\"\n";

struct RunResult {
  int status = 0;
  double wall_s = 0;
  LogSummary summary;
};

struct Arm {
  std::string name;
  std::string policy;       // the file, as records name it
  std::string policy_text;  // its text as validated, which every run gets (run_policy.hpp)
  std::vector<RunResult> runs;
  ConnectionGroup merged;  // every run's connections, for the CDF
};

RunResult run_once(const std::string& resolved, std::vector<char*> argv, const Arm& arm, const std::string& log) {
  if (!put_policy_text_in_environment(arm.policy_text, arm.policy)) {
    setenv("TCPTUNE_POLICY", arm.policy.c_str(), 1);  // over 64 KiB: ab's copy, read by each process
    unsetenv("TCPTUNE_POLICY_TOML");
    unsetenv("TCPTUNE_POLICY_NAME");
  }
  setenv("TCPTUNE_LOG", log.c_str(), 1);
  setenv("TCPTUNE_LOG_FORMAT", "jsonl", 1);
  (void)::unlink(log.c_str());
  RunResult result;
  const auto start = std::chrono::steady_clock::now();
  result.status = run_child(resolved, argv);
  result.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::string error;
  summarize_logs({log}, "rule", result.summary, error);
  return result;
}

using Metric = std::function<double(const RunResult&)>;

void print_metric(const char* name, const Arm& observe, const Arm& tuned, const Metric& metric) {
  auto spread = [&](const Arm& arm) {
    std::vector<double> values;
    for (const RunResult& run : arm.runs) {
      values.push_back(metric(run));
    }
    return spread_of(std::move(values));
  };
  (void)std::fputs(metric_row(name, spread(observe), spread(tuned)).c_str(), stdout);
}

}  // namespace

int ab_command(const AbOptions& options) {
  const int runs = options.runs;
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
  const std::string shim = locate_shim(problem);
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
  (void)::mkdir(out.c_str(), 0755);
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

  Arm observe{"observe", observe_policy, kObservePolicyText, {}, {}};
  Arm tuned{"tuned", tuned_policy, policy_text, {}, {}};
  int failures = 0;
  // A run killed by a signal (Ctrl-C, SIGTERM passed on, a crash) is the last: the table shows
  // the runs so far, and ab then dies by that signal, as a parent waiting on it expects.
  std::optional<int> killed;
  for (int run = 1; run <= runs && !killed; ++run) {
    for (Arm* arm : {&observe, &tuned}) {  // interleaved: drift hits both arms alike
      const std::string log = out + "/" + arm->name + "-" + std::to_string(run) + ".jsonl";
      RunResult result = run_once(resolved, argv, *arm, log);
      if (WIFSIGNALED(result.status)) {
        (void)std::fprintf(stderr, "tcptune ab: run %d/%d %-8s killed by signal %d (%s), %.3f s; no more runs\n", run,
                           runs, arm->name.c_str(), WTERMSIG(result.status), strsignal(WTERMSIG(result.status)),
                           result.wall_s);
        killed = result.status;
      } else {
        (void)std::fprintf(stderr, "tcptune ab: run %d/%d %-8s exit %d, %.3f s\n", run, runs, arm->name.c_str(),
                           shell_exit_status(result.status), result.wall_s);
      }
      failures += result.status != 0 ? 1 : 0;
      arm->merged.merge(result.summary.total);
      arm->runs.push_back(std::move(result));
      if (killed) {
        break;
      }
    }
  }
  std::printf("%zu run(s) per arm, interleaved; median [min-max]\n", observe.runs.size());
  std::printf("%-24s %29s %29s %10s\n", "metric", "observe-only", "tuned", "tuned/obs");
  print_metric("wall time (s)", observe, tuned, [](const RunResult& r) { return r.wall_s; });
  print_metric("write p50 (us)", observe, tuned,
               [](const RunResult& r) { return r.summary.total.write_latency.percentile_us(50); });
  print_metric("write p99 (us)", observe, tuned,
               [](const RunResult& r) { return r.summary.total.write_latency.percentile_us(99); });
  print_metric("ack p50 (us)", observe, tuned,
               [](const RunResult& r) { return r.summary.total.ack_latency.percentile_us(50); });
  print_metric("ack p99 (us)", observe, tuned,
               [](const RunResult& r) { return r.summary.total.ack_latency.percentile_us(99); });
  print_metric("throughput (MB/s)", observe, tuned, [](const RunResult& r) {
    return r.wall_s > 0 ? static_cast<double>(r.summary.total.counters.bytes) / r.wall_s / 1e6 : 0;
  });
  print_metric("idle restarts", observe, tuned,
               [](const RunResult& r) { return static_cast<double>(r.summary.total.counters.idle_restarts); });
  print_metric("heartbeats", observe, tuned,
               [](const RunResult& r) { return static_cast<double>(r.summary.total.counters.heartbeats); });
  print_metric("writes", observe, tuned,
               [](const RunResult& r) { return static_cast<double>(r.summary.total.counters.writes); });
  print_metric("connections", observe, tuned,
               [](const RunResult& r) { return static_cast<double>(r.summary.total.connections); });
  const std::string plot = write_cdf_plot(out + "/latency-cdf", {{"write, observe-only", &observe.merged.write_latency},
                                                                 {"write, tuned", &tuned.merged.write_latency},
                                                                 {"ack, observe-only", &observe.merged.ack_latency},
                                                                 {"ack, tuned", &tuned.merged.ack_latency}});
  std::printf("logs in %s; latency CDF: %s\n", out.c_str(), plot.c_str());
  if (killed) {
    return end_as_program(*killed);
  }
  if (failures != 0) {
    (void)std::fprintf(stderr, "tcptune ab: %d run(s) exited non-zero\n", failures);
    return 1;
  }
  return 0;
}

}  // namespace tcptune::cli
