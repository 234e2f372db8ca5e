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
  std::vector<FileRead> reads;
  if (!summarize_slow_writes(files, sites, without, reads, error)) {
    (void)std::fprintf(stderr, "tcptune report: %s\n", error.c_str());
    return 1;
  }
  if (!say_files_without_records("report", reads)) {
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

}  // namespace

int report_command(const ReportOptions& options) {
  const std::string& by = options.by;
  const std::vector<std::string>& files = options.logs;
  if (by == "callsite") {
    return report_callsites(files, options.json);
  }
  LogSummary summary;
  std::string error;
  if (!summarize_logs(files, by, summary, error)) {
    (void)std::fprintf(stderr, "tcptune report: %s\n", error.c_str());
    return 1;
  }
  if (!say_files_without_records("report", summary.files)) {
    return 1;
  }
  const std::uint64_t records = summary.records;
  const std::uint64_t skipped = summary.skipped_lines;
  if (options.json) {
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
