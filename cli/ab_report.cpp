#include "ab_report.hpp"

#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>

#include <nlohmann/json.hpp>

#include "ab_table.hpp"
#include "svg_chart.hpp"
#include "text_file_io.hpp"

namespace tcptune::cli {

namespace {

const char* better_word(Better better) {
  switch (better) {
    case Better::lower: return "lower";
    case Better::higher: return "higher";
    case Better::unjudged: break;
  }
  return nullptr;
}

nlohmann::json arm_json(const std::vector<RunValue>& runs) {
  nlohmann::json arm = nlohmann::json::object();
  nlohmann::json values = nlohmann::json::array();
  nlohmann::json below = nlohmann::json::array();
  for (const RunValue& run : runs) {
    values.push_back(run.value);
    below.push_back(run.below_resolution);
  }
  arm["values"] = values;
  arm["below_resolution"] = below;
  if (!runs.empty()) {
    const ArmSummary summary = summarize_arm(runs);
    arm["median"] = summary.median;
    arm["median_below_resolution"] = summary.median_below_resolution;
    arm["min"] = summary.low.value;
    arm["max"] = summary.high.value;
  }
  return arm;
}

nlohmann::json metric_json(const AbMetric& metric) {
  nlohmann::json out = {{"name", metric.name},
                        {"unit", metric.unit},
                        {"observe", arm_json(metric.observe)},
                        {"tuned", arm_json(metric.tuned)}};
  if (const char* better = better_word(metric.better)) {
    out["better_is"] = better;
  }
  const Verdict& verdict = metric.verdict;
  out["ratio"] = verdict.ratio ? nlohmann::json(*verdict.ratio) : nlohmann::json(nullptr);
  out["ratio_interval"] = verdict.interval ? nlohmann::json::array({verdict.interval->low, verdict.interval->high})
                                           : nlohmann::json(nullptr);
  if (!verdict.word.empty()) {
    out["verdict"] = verdict.word;
    out["p_value"] = verdict.test.p_value;
    out["u"] = verdict.test.u;
    out["test"] = verdict.test.exact ? "Mann-Whitney U, exact" : "Mann-Whitney U, normal approximation";
  }
  if (!verdict.advice.empty()) {
    out["advice"] = verdict.advice;
  }
  if (!verdict.reason.empty()) {
    out["not_judged"] = verdict.reason;
  }
  return out;
}

std::string escaped(const std::string& text) {
  return xml_escaped(text);
}

std::string host_line() {
  struct utsname name {};
  std::string line;
  if (::uname(&name) == 0) {
    line = std::string(name.nodename) + ", " + name.sysname + " " + name.release + " " + name.machine;
  }
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm utc{};
  char when[32] = "";
  if (::gmtime_r(&now, &utc) != nullptr) {
    (void)std::strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S UTC", &utc);
  }
  return line + (line.empty() ? "" : "; ") + "written " + when;
}

std::string html_verdicts(const AbResults& results) {
  const std::string ratio = results.heading.empty() ? "tuned / observe-only" : escaped(results.ratio_label);
  std::string html = "<table>\n<tr><th>metric</th><th>" + escaped(results.observe.name) +
                     "<br>median [min-max]</th><th>" + escaped(results.tuned.name) + "<br>median [min-max]</th><th>" +
                     ratio + "<br>ratio of medians [95% interval]</th><th>p</th><th>verdict</th></tr>\n";
  for (const AbMetric& metric : results.metrics) {
    const Verdict& verdict = metric.verdict;
    char p_value[48] = "";
    if (!verdict.word.empty()) {
      (void)std::snprintf(p_value, sizeof p_value, "%.2g%s", verdict.test.p_value,
                          verdict.test.exact ? " (exact)" : " (normal approx.)");
    }
    const std::string css = verdict.word == "better" ? "better" : verdict.word == "worse" ? "worse" : "";
    html += "<tr><td>" + escaped(metric.label()) + "</td><td>" + escaped(format_arm(metric.observe)) + "</td><td>" +
            escaped(format_arm(metric.tuned)) + "</td><td>" + escaped(format_ratio(verdict)) + "</td><td>" + p_value +
            "</td><td" + (css.empty() ? "" : " class=\"" + css + "\"") + ">" + escaped(verdict.word) + "</td></tr>\n";
  }
  html += "</table>\n<ul>\n";
  for (const std::string& line : results.beside) {
    html += "<li>" + escaped(line) + "</li>\n";
  }
  for (const AbMetric& metric : results.metrics) {
    if (!metric.verdict.advice.empty()) {
      html += "<li>" + escaped(metric.name) + ": " + escaped(metric.verdict.advice) + "</li>\n";
    } else if (!metric.verdict.reason.empty()) {
      html += "<li>" + escaped(metric.name) + ": not judged: " + escaped(metric.verdict.reason) + "</li>\n";
    }
  }
  return html + "</ul>\n";
}

std::string html_runs(const AbResults& results) {
  std::string html =
      "<table>\n<tr><th>order</th><th>arm</th><th>run</th><th>outcome</th><th>wall time (s)</th>"
      "<th>latencies handed over</th><th>log</th></tr>\n";
  int order = 0;
  for (const AbRun& run : results.runs) {
    char wall[32];
    (void)std::snprintf(wall, sizeof wall, "%.4g", run.wall_s);
    std::string handed = std::to_string(run.requests);
    if (run.bad_latency_lines > 0) {
      handed += " (" + std::to_string(run.bad_latency_lines) + " lines not a latency, first " +
                run.first_bad_latency_line + ")";
    }
    html += "<tr><td>" + std::to_string(++order) + "</td><td>" + escaped(run.arm) + "</td><td>" +
            std::to_string(run.run) + "</td><td>" + escaped(run.outcome) + "</td><td>" + wall + "</td><td>" +
            escaped(handed) + "</td><td>" + escaped(run.log) + "</td></tr>\n";
  }
  return html + "</table>\n";
}

constexpr const char* kMethod = R"(<p>Each arm ran the command the same number of times, the arms
interleaved so that drift on the host hits both alike; both ran under the tcptune shim, which
measured the same way in both and changed nothing in the observe-only arm. Every verdict compares
runs: one value per run and arm (its wall time, or a percentile of that run's latencies), because
the requests of one run share its conditions and pooling them would overstate the confidence.</p>
<ul>
<li><b>p</b>: two-sided Mann-Whitney U test of the tuned runs against the observe-only runs, exact
without ties for up to 50 runs per arm, else the normal approximation with ties and continuity
corrections. <b>better</b> or <b>worse</b> at p &lt; 0.05, else <b>no difference shown</b> (which
is not evidence that there is none).</li>
<li><b>ratio</b>: median of the tuned runs over median of the observe-only runs; the interval is a
95% percentile bootstrap (2000 resamples, seed 1: the same runs give the same interval).</li>
<li><b>advice</b>: when the arms overlap, the difference that many runs would show 80% of the time,
and the runs that would show the ratio seen, from the spread of the runs' logarithms (the rank
test's efficiency taken as 3/&pi; of a t test's).</li>
<li><b>request</b> latencies are what the program handed over through the file named by
<code>TCPTUNE_AB_LATENCY_FILE</code> (one per line, seconds, or with a unit: ms, us, ns).
<b>write</b> latency is the time a write-family call took; <b>ack</b> latency the time from a
sampled write's return to the peer's acknowledgement of its last byte, polled every millisecond: a
value shown as &lt;1 ms was acknowledged before the first poll, below that resolution, and ranks
below every timed value.</li>
</ul>
)";

}  // namespace

nlohmann::json ab_summary_json(const AbResults& results) {
  nlohmann::json arms = nlohmann::json::array();
  for (const AbArm* arm : {&results.observe, &results.tuned}) {
    nlohmann::json runs = nlohmann::json::array();
    for (const AbRun& run : results.runs) {
      if (run.arm != arm->name) {
        continue;
      }
      runs.push_back({{"run", run.run},
                      {"outcome", run.outcome},
                      {"failed", run.failed},
                      {"wall_s", run.wall_s},
                      {"log", run.log},
                      {"latency_file", run.latency_file},
                      {"latencies", run.requests},
                      {"bad_latency_lines", run.bad_latency_lines}});
    }
    arms.push_back({{"name", arm->name}, {"policy", arm->policy}, {"runs", runs}});
  }
  nlohmann::json metrics = nlohmann::json::array();
  for (const AbMetric& metric : results.metrics) {
    metrics.push_back(metric_json(metric));
  }
  nlohmann::json plots = nlohmann::json::array();
  for (const AbPlot& plot : results.plots) {
    plots.push_back({{"file", plot.file}, {"title", plot.title}, {"not_drawn", plot.notes}});
  }
  return {{"command", results.command},
          {"invocation", results.invocation},
          {"runs_per_arm", results.runs_requested},
          {"arms", arms},
          {"metrics", metrics},
          {"plots", plots},
          {"notes", results.notes},
          {"statistics",
           {{"test", "Mann-Whitney U, two-sided, over runs"},
            {"alpha", kVerdictAlpha},
            {"exact_up_to_runs", kExactMaxSize},
            {"interval", "percentile bootstrap of the ratio of medians"},
            {"confidence", kIntervalConfidence},
            {"resamples", kBootstrapResamples},
            {"seed", kBootstrapSeed}}}};
}

std::string ab_report_html(const AbResults& results) {
  const std::string command = shell_words(results.command);
  std::string html =
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>tcptune ab: " + escaped(command) +
      "</title>\n<style>\nbody{font-family:sans-serif;max-width:1000px;margin:1.5em auto;padding:0 1em;color:#222}\n"
      "table{border-collapse:collapse;margin:0.5em 0}td,th{border:1px solid #ccc;padding:3px 8px;text-align:left;"
      "vertical-align:top}\n.better{color:#060;font-weight:bold}.worse{color:#b00;font-weight:bold}\n"
      "pre,code{background:#f4f4f4}pre{padding:8px;overflow:auto}figure{margin:1em 0}\n</style>\n</head>\n<body>\n";
  html += "<h1>tcptune ab: <code>" + escaped(command) + "</code></h1>\n";
  if (!results.intro_html.empty()) {
    html += results.intro_html;
  } else {
    html += "<p>" + escaped(results.observe.name) + " (policy <code>" + escaped(results.observe.policy) +
            "</code>) against " + escaped(results.tuned.name) + " (policy <code>" + escaped(results.tuned.policy) +
            "</code>), " + std::to_string(results.runs_requested) +
            " run(s) per arm, interleaved. Host: " + escaped(host_line()) + ".</p>\n";
  }
  html += "<h2>Verdicts</h2>\n" + html_verdicts(results);
  if (!results.notes.empty()) {
    html += "<h2>Notes</h2>\n<ul>\n";
    for (const std::string& note : results.notes) {
      html += "<li>" + escaped(note) + "</li>\n";
    }
    html += "</ul>\n";
  }
  html += "<h2>Plots</h2>\n";
  for (const AbPlot& plot : results.plots) {
    html += "<figure>\n" + plot.svg + "<figcaption>" + escaped(plot.title) + " (" + escaped(plot.file) + ")";
    for (const std::string& note : plot.notes) {
      html += "<br>not drawn: " + escaped(note);
    }
    html += "</figcaption>\n</figure>\n";
  }
  html += "<h2>Arms</h2>\n";
  for (const AbArm* arm : {&results.observe, &results.tuned}) {
    html += "<h3>" + escaped(arm->name) + ": <code>" + escaped(arm->policy) + "</code></h3>\n<pre>" +
            escaped(arm->policy_text) + "</pre>\n";
  }
  if (!results.runs.empty()) {
    html += "<h2>Runs</h2>\n" + html_runs(results);
  }
  html += "<h2>Method</h2>\n";
  html += results.method_html.empty() ? std::string(kMethod) : results.method_html;
  html += "<h2>Reproduce</h2>\n<pre>" + escaped(results.invocation) + "</pre>\n</body>\n</html>\n";
  return html;
}

bool make_out_directory(const std::string& directory, std::string& error) {
  if (::mkdir(directory.c_str(), 0755) != 0 && errno != EEXIST) {
    error = "--out " + directory + ": cannot create it: " + std::strerror(errno);
    return false;
  }
  struct stat status {};
  if (::stat(directory.c_str(), &status) != 0 || !S_ISDIR(status.st_mode)) {
    error = "--out " + directory + ": not a directory";
    return false;
  }
  if (::access(directory.c_str(), W_OK | X_OK) != 0) {
    error = "--out " + directory + ": cannot write in it: " + std::strerror(errno);
    return false;
  }
  return true;
}

bool write_ab_report(const std::string& directory, const AbResults& results, std::string& error,
                     const nlohmann::json* more_json) {
  nlohmann::json summary = ab_summary_json(results);
  if (more_json != nullptr) {
    summary.update(*more_json);
  }
  return write_file_atomically(directory + "/summary.txt", ab_table(results), error) &&
         write_file_atomically(directory + "/summary.json",
                               summary.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n", error) &&
         write_file_atomically(directory + "/report.html", ab_report_html(results), error);
}

}  // namespace tcptune::cli
