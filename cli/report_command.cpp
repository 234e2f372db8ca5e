// tcptune report LOG... [--by rule|peer|program] [--json]: the conn_close records of one or
// more JSON-lines logs, grouped, with write-latency percentiles merged exactly from each
// connection's histogram buckets.
#include <algorithm>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "commands.hpp"
#include "log_summary.hpp"

namespace tcptune::cli {

namespace {

std::string latency_json(const MergedHistogram& histogram) {
  char text[200];
  (void)std::snprintf(text, sizeof text, R"({"p50":%.3f,"p90":%.3f,"p99":%.3f,"p999":%.3f,"max":%.3f})",
                      histogram.percentile_us(50), histogram.percentile_us(90), histogram.percentile_us(99),
                      histogram.percentile_us(99.9), histogram.max_us);
  return text;
}

// "text" with quotes and backslashes escaped: keys come from records the shim already escaped.
std::string json_string(const std::string& text) {
  std::string out = "\"";
  for (const char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
    }
    out += c;
  }
  return out + "\"";
}

std::string group_json(const std::string& key, const ConnectionGroup& group) {
  char text[600];
  (void)std::snprintf(
      text, sizeof text,
      R"(,"connections":%llu,"writes":%llu,"bytes":%llu,"partial_writes":%llu,)"
      R"("eagain":%llu,"idle_restarts":%llu,"heartbeats":%llu,"write_latency_us":%s,"ack_latency_us":%s})",
      static_cast<unsigned long long>(group.connections), static_cast<unsigned long long>(group.writes),
      static_cast<unsigned long long>(group.bytes), static_cast<unsigned long long>(group.partial_writes),
      static_cast<unsigned long long>(group.would_block), static_cast<unsigned long long>(group.idle_restarts),
      static_cast<unsigned long long>(group.heartbeats), latency_json(group.write_latency).c_str(),
      latency_json(group.ack_latency).c_str());
  return R"({"key":)" + json_string(key) + text;
}

// Slow writes by where the app made them, the costliest first.
int report_callsites(const std::vector<std::string>& files, bool json) {
  std::map<std::string, SlowWriteSite> sites;
  std::uint64_t without = 0;
  std::string error;
  if (!summarize_slow_writes(files, sites, without, error)) {
    (void)std::fprintf(stderr, "tcptune report: %s\n", error.c_str());
    return 1;
  }
  std::vector<std::pair<std::string, SlowWriteSite>> sorted(sites.begin(), sites.end());
  std::sort(sorted.begin(), sorted.end(),
            [](const auto& a, const auto& b) { return a.second.total_us > b.second.total_us; });
  if (json) {
    std::string out = R"({"by":"callsite","sites":[)";
    for (std::size_t i = 0; i < sorted.size(); ++i) {
      char numbers[160];
      (void)std::snprintf(numbers, sizeof numbers, R"(,"slow_writes":%llu,"total_us":%.1f,"max_us":%.1f})",
                          static_cast<unsigned long long>(sorted[i].second.writes), sorted[i].second.total_us,
                          sorted[i].second.max_us);
      out += (i == 0 ? "" : ",") + std::string(R"({"callsite":)") + json_string(sorted[i].first) + numbers;
    }
    out += R"(],"slow_writes_without_callsite":)" + std::to_string(without) + "}";
    std::puts(out.c_str());
    return 0;
  }
  std::printf("%12s %12s %12s  %s\n", "slow writes", "total (ms)", "max (ms)", "call site (innermost first)");
  for (const auto& [site, stats] : sorted) {
    std::printf("%12llu %12.1f %12.1f  %s\n", static_cast<unsigned long long>(stats.writes), stats.total_us / 1000,
                stats.max_us / 1000, site.c_str());
  }
  if (without != 0) {
    std::printf("%llu slow write(s) without a call site (callsite = true was off for them)\n",
                static_cast<unsigned long long>(without));
  }
  return 0;
}

int usage() {
  (void)std::fputs("usage: tcptune report LOG... [--by rule|peer|program|callsite] [--json]\n", stderr);
  return kExitUsage;
}

}  // namespace

int report_command(const std::vector<std::string>& args) {
  std::string by = "rule";
  bool json = false;
  std::vector<std::string> files;
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--by" && i + 1 < args.size()) {
      by = args[++i];
    } else if (args[i] == "--json") {
      json = true;
    } else if (args[i].rfind("--", 0) == 0) {
      (void)std::fprintf(stderr, "tcptune report: unknown option '%s'\n", args[i].c_str());
      return usage();
    } else {
      files.push_back(args[i]);
    }
  }
  if (files.empty() || (by != "rule" && by != "peer" && by != "program" && by != "callsite")) {
    return usage();
  }
  if (by == "callsite") {
    return report_callsites(files, json);
  }
  LogSummary summary;
  std::string error;
  if (!summarize_logs(files, by, summary, error)) {
    (void)std::fprintf(stderr, "tcptune report: %s\n", error.c_str());
    return 1;
  }
  const auto& groups = summary.groups;
  const ConnectionGroup& total = summary.total;
  const std::uint64_t records = summary.records;
  const std::uint64_t skipped = summary.skipped_lines;
  if (json) {
    std::string out = R"({"by":")" + by + R"(","groups":[)";
    bool first = true;
    for (const auto& [key, group] : groups) {
      out += (first ? "" : ",") + group_json(key, group);
      first = false;
    }
    out += R"(],"total":)" + group_json("total", total) + R"(,"records":)" + std::to_string(records) +
           R"(,"skipped_lines":)" + std::to_string(skipped) + "}";
    std::puts(out.c_str());
    return 0;
  }
  print_summary_table(stdout, summary, by);
  std::printf("%llu records from %zu file(s)", static_cast<unsigned long long>(records), files.size());
  if (skipped != 0) {
    std::printf("; %llu line(s) skipped (not JSON: a text log, or a line cut by kill -9)",
                static_cast<unsigned long long>(skipped));
  }
  std::printf("\n");
  return 0;
}

}  // namespace tcptune::cli
