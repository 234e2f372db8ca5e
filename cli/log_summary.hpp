// The conn_close records of jsonl logs, grouped by rule, peer address or program, with
// write-latency percentiles merged exactly from each connection's histogram buckets. Read
// through the records' documented JSON (docs/records-and-metrics.md), as every reader outside the shim must.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "connection_counters.hpp"
#include "log_lines.hpp"
#include "process_lifetimes.hpp"

namespace tcptune::cli {

// Histogram buckets as the records carry them: [lower, upper) ns -> count.
struct MergedHistogram {
  std::map<std::pair<double, double>, std::uint64_t> buckets;
  double max_us = 0;
  // Samples faster than the measurement's resolution, not timed ("acked_before_first_poll").
  std::uint64_t below_resolution = 0;

  // A record's "*_latency_hist" ([[lower, upper, count], ...]) and "*_latency_us" ({"max": ...}); either may be null.
  void add(const nlohmann::json* buckets_json, const nlohmann::json* summary_json);
  void merge(const MergedHistogram& other);
  // Nearest rank over the buckets, each reported as the shim reports it (2ab/(a+b)).
  [[nodiscard]] double percentile_us(double p) const;
};

struct ConnectionGroup {
  std::uint64_t connections = 0;
  // Of those, connections whose writes were not measured (supervised mode: "writes_measured":
  // false); their counters and latencies are absent, not zero.
  std::uint64_t unmeasured = 0;
  // Of those, connections whose conn_close record was dropped: their process's summary counts
  // them and their counters (ProcessLifetimes), but their latencies are not in the histograms.
  std::uint64_t without_record = 0;
  telemetry::ConnectionCounters counters;  // every counter, read by the name the shim writes
  MergedHistogram write_latency;
  MergedHistogram ack_latency;

  void add(const nlohmann::json& conn_close);
  void add_without_record(const CountedConnections& missing);
  void merge(const ConnectionGroup& other);
};

// What one file gave: its lines, and those that were JSON records.
struct FileRead {
  std::string path;
  std::uint64_t lines = 0;
  std::uint64_t records = 0;
  bool unfinished = false;  // reading stopped at a deadline before its end
};
// Why a file gave no record, in words ("empty ...", "N lines, none a JSON record: a text log?").
std::string why_no_records(const FileRead& read);
// Names each file without records, with why, on stderr as "tcptune COMMAND: ..."; none in any of
// them fails (false): a text log, an empty or a wrong file must not pass for a run without
// connections.
bool say_files_without_records(const char* command, const std::vector<FileRead>& reads);

struct LogSummary {
  std::vector<FileRead> files;  // in the order given
  std::map<std::string, ConnectionGroup> groups;
  ConnectionGroup total;
  std::uint64_t records = 0;
  std::uint64_t skipped_lines = 0;  // not JSON: a text log, or a line cut by kill -9
  // Records reported dropped that no summary makes up for: the counts are short (MissingRecords).
  std::uint64_t uncounted_dropped_records = 0;
  bool unfinished = false;  // reading stopped at the deadline: the counts are short
};

// fn(record) for every line of every file in order; nullptr for a line that is not a JSON object
// (or longer than LogLines::kMostLineBytes). What each file gave goes to `reads`. Returns false
// (with the file in `error`) if one cannot be read. At `deadline` it stops, the file it was
// reading marked unfinished and the later ones not read.
bool for_each_record(const std::vector<std::string>& files, const std::function<void(const nlohmann::json*)>& fn,
                     std::vector<FileRead>& reads, std::string& error,
                     std::chrono::steady_clock::time_point deadline = kNoDeadline);

// by: "rule", "peer" or "program". Returns false (with the file in `error`) if one is unreadable.
// Counts are exact where the processes wrote their summaries: a connection whose conn_close
// record was dropped is added from its summary (ConnectionGroup::without_record).
// Reading stops at `deadline` (LogSummary::unfinished).
bool summarize_logs(const std::vector<std::string>& files, const std::string& by, LogSummary& out, std::string& error,
                    std::chrono::steady_clock::time_point deadline = kNoDeadline);

// slow_write records grouped by call site (their first three frames), for report --by callsite.
struct SlowWriteSite {
  std::uint64_t writes = 0;
  double total_us = 0;
  double max_us = 0;
};
bool summarize_slow_writes(const std::vector<std::string>& files, std::map<std::string, SlowWriteSite>& out,
                           std::uint64_t& without_callsite, std::vector<FileRead>& reads, std::string& error);

// One row per group and a total: connections, writes, bytes, write p50/p90/p99/max (us), idle
// restarts; then a note for what the rows cannot show (connections without a record, dropped
// records no summary counts, connections whose writes were not seen).
void print_summary_table(std::FILE* out, const LogSummary& summary, const std::string& by);

}  // namespace tcptune::cli
