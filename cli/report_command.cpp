// tcptune report LOG... [--by rule|peer|program|callsite] [--json]: the conn_close records of one or
// more JSON-lines logs, grouped, with write-latency percentiles merged exactly from each
// connection's histogram buckets.
#include <algorithm>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "commands.hpp"
#include "log_summary.hpp"
#include "report_json.hpp"

namespace tcptune::cli {

namespace {

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
    std::puts(to_json_line(callsites_json(sorted, without)).c_str());
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
  const std::uint64_t records = summary.records;
  const std::uint64_t skipped = summary.skipped_lines;
  if (json) {
    std::puts(to_json_line(summary_json(summary, by)).c_str());
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
