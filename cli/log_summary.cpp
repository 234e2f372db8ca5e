#include "log_summary.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <system_error>

#include <nlohmann/json.hpp>

#include "log_record.hpp"
#include "tcptune/config/units.hpp"

namespace tcptune::cli {

namespace {

const nlohmann::json* member(const nlohmann::json& record, const char* key) {
  const auto found = record.find(key);  // records are objects: parse_log_record returns no other
  return found == record.end() ? nullptr : &*found;
}

}  // namespace

void MergedHistogram::add(const nlohmann::json* buckets_json, const nlohmann::json* summary_json) {
  if (summary_json != nullptr && summary_json->is_object()) {
    max_us = std::max(max_us, number_field(*summary_json, "max"));
    below_resolution += count_field(*summary_json, "acked_before_first_poll");
  }
  if (buckets_json == nullptr || !buckets_json->is_array()) {
    return;
  }
  for (const nlohmann::json& bucket : *buckets_json) {
    if (bucket.is_array() && bucket.size() == 3) {
      buckets[{as_number(bucket[0]), as_number(bucket[1])}] += as_count(bucket[2]);
    }
  }
}

void MergedHistogram::merge(const MergedHistogram& other) {
  max_us = std::max(max_us, other.max_us);
  below_resolution += other.below_resolution;
  for (const auto& [bounds, count] : other.buckets) {
    buckets[bounds] += count;
  }
}

double MergedHistogram::percentile_us(double p) const {
  std::uint64_t total = 0;
  for (const auto& [bounds, count] : buckets) {
    total += count;
  }
  if (total == 0) {
    return 0;
  }
  const double wanted = p / 100.0 * static_cast<double>(total);
  auto rank = static_cast<std::uint64_t>(wanted);
  if (static_cast<double>(rank) < wanted || rank == 0) {
    ++rank;
  }
  std::uint64_t seen = 0;
  for (const auto& [bounds, count] : buckets) {
    seen += count;
    if (seen >= rank) {
      const auto [low, high] = bounds;
      const double value = low + high > 0 ? 2 * low * high / (low + high) : 0;
      return std::min(value / 1000.0, max_us);
    }
  }
  return max_us;
}

void ConnectionGroup::add(const nlohmann::json& record) {
  ++connections;
  if (const nlohmann::json* measured = member(record, "writes_measured"); measured != nullptr && *measured == false) {
    ++unmeasured;
  }
  for (const telemetry::CounterField& field : telemetry::kCounterFields) {
    counters.*field.member += count_field(record, field.record_field);
  }
  write_latency.add(member(record, "write_latency_hist"), member(record, "write_latency_us"));
  ack_latency.add(member(record, "ack_latency_hist"), member(record, "ack_latency_us"));
}

void ConnectionGroup::add_without_record(const CountedConnections& missing) {
  connections += missing.connections;
  without_record += missing.connections;
  counters += missing.counters;
}

void ConnectionGroup::merge(const ConnectionGroup& other) {
  connections += other.connections;
  unmeasured += other.unmeasured;
  without_record += other.without_record;
  counters += other.counters;
  write_latency.merge(other.write_latency);
  ack_latency.merge(other.ack_latency);
}

namespace {

std::string key_of(const nlohmann::json& record, const std::string& by) {
  if (by == "peer") {
    std::string peer = string_field(record, "peer", "(unknown)");
    const auto colon = peer.rfind(':');  // the address, without the (ephemeral) port
    return colon == std::string::npos ? peer : peer.substr(0, colon);
  }
  return string_field(record, by, "(unknown)");
}

}  // namespace

bool for_each_record(const std::vector<std::string>& files, const std::function<void(const nlohmann::json*)>& fn,
                     std::vector<FileRead>& reads, std::string& error, std::chrono::steady_clock::time_point deadline) {
  for (const std::string& file : files) {
    std::error_code code;
    if (std::filesystem::is_directory(file, code)) {
      error = "cannot read " + file + ": a directory, not a log";
      return false;
    }
    errno = 0;
    std::ifstream in(file);
    if (!in) {
      error = "cannot read " + file + (errno != 0 ? ": " + std::generic_category().message(errno) : std::string());
      return false;
    }
    FileRead& read = reads.emplace_back();
    read.path = file;
    LogLines lines(in, deadline);
    std::string line;
    bool cut = false;
    while (lines.next(line, cut)) {
      const std::optional<nlohmann::json> record = cut ? std::nullopt : parse_log_record(line);
      ++read.lines;
      read.records += record.has_value() ? 1 : 0;
      fn(record.has_value() ? &*record : nullptr);
    }
    if (lines.stopped()) {
      read.unfinished = true;
      return true;
    }
  }
  return true;
}

bool summarize_logs(const std::vector<std::string>& files, const std::string& by, LogSummary& out, std::string& error,
                    std::chrono::steady_clock::time_point deadline) {
  // First where each process's lifetimes begin, so that its records find their lifetime in
  // whatever order the files come.
  ProcessLifetimes lifetimes;
  for (const std::string& file : files) {
    std::ifstream in(file);
    LogLines lines(in, deadline);
    std::string line;
    bool cut = false;
    while (lines.next(line, cut)) {
      if (!cut && line.find(R"("event":"start")") != std::string::npos) {
        if (const std::optional<nlohmann::json> record = parse_log_record(line);
            record.has_value() && string_field(*record, "event") == "start") {
          lifetimes.add_start(*record);
        }
      }
    }
    if (lines.stopped()) {
      out.unfinished = true;
      return true;
    }
  }
  const bool read = for_each_record(
      files,
      [&](const nlohmann::json* record) {
        if (record == nullptr) {
          ++out.skipped_lines;
          return;
        }
        ++out.records;
        lifetimes.add(*record);
        if (string_field(*record, "event") == "conn_close") {
          out.groups[key_of(*record, by)].add(*record);
        }
      },
      out.files, error, deadline);
  out.unfinished =
      std::any_of(out.files.begin(), out.files.end(), [](const FileRead& file) { return file.unfinished; });
  for (const auto& [key, group] : out.groups) {
    out.total.merge(group);
  }
  // The summaries' counts for the connections whose records were dropped.
  const MissingRecords missing = lifetimes.missing(by);
  for (const auto& [key, counted] : missing.by_group) {
    out.groups[key].add_without_record(counted);
  }
  out.total.add_without_record(missing.total);
  out.uncounted_dropped_records = missing.uncounted_dropped;
  return read;
}

std::string why_no_records(const FileRead& read) {
  if (read.lines == 0) {
    return "empty: no process wrote a record to it (a program that opens no TCP socket writes at most its start "
           "record; a level above info writes no connection)";
  }
  return std::to_string(read.lines) + " line" + (read.lines == 1 ? "" : "s") +
         ", none a JSON record: a text log ([log] format = \"text\" or TCPTUNE_LOG_FORMAT=text)? tcptune report "
         "reads jsonl, the default format";
}

bool say_files_without_records(const char* command, const std::vector<FileRead>& reads) {
  std::uint64_t records = 0;
  for (const FileRead& read : reads) {
    records += read.records;
  }
  for (const FileRead& read : reads) {
    if (read.records == 0) {
      (void)std::fprintf(stderr, "tcptune %s: %s%s: %s\n", command, records == 0 ? "" : "warning: ", read.path.c_str(),
                         why_no_records(read).c_str());
    }
  }
  if (records == 0) {
    (void)std::fprintf(stderr, "tcptune %s: no record read\n", command);
  }
  return records != 0;
}

bool summarize_slow_writes(const std::vector<std::string>& files, std::map<std::string, SlowWriteSite>& out,
                           std::uint64_t& without_callsite, std::vector<FileRead>& reads, std::string& error) {
  return for_each_record(
      files,
      [&](const nlohmann::json* record) {
        if (record == nullptr || string_field(*record, "event") != "slow_write") {
          return;
        }
        const nlohmann::json* frames = member(*record, "callsite");
        if (frames == nullptr || !frames->is_array() || frames->empty()) {
          ++without_callsite;
          return;
        }
        std::string key;
        for (std::size_t i = 0; i < frames->size() && i < 3; ++i) {
          const nlohmann::json& frame = (*frames)[i];
          key += (i == 0 ? "" : " < ") + (frame.is_string() ? frame.get<std::string>() : std::string("?"));
        }
        SlowWriteSite& site = out[key];
        const double duration = number_field(*record, "duration_us");
        ++site.writes;
        site.total_us += duration;
        site.max_us = std::max(site.max_us, duration);
      },
      reads, error);
}

namespace {

void print_row(std::FILE* out, const std::string& key, const ConnectionGroup& group) {
  if (group.unmeasured == group.connections) {
    // Nothing but supervised connections: no write was seen; idle restarts were, between polls.
    (void)std::fprintf(out, "%-20s %6llu %8s %9s %9s %9s %9s %9s %9s %8llu %8s\n", key.c_str(),
                       static_cast<unsigned long long>(group.connections), "-", "-", "-", "-", "-", "-", "-",
                       static_cast<unsigned long long>(group.counters.idle_restarts), "-");
    return;
  }
  (void)std::fprintf(out, "%-20s %6llu %8llu %9s ", key.c_str(), static_cast<unsigned long long>(group.connections),
                     static_cast<unsigned long long>(group.counters.writes),
                     config::format_size(group.counters.bytes).c_str());
  if (group.without_record + group.unmeasured == group.connections) {
    // Only connections whose records were dropped: counted, but no latency is known.
    (void)std::fprintf(out, "%9s %9s %9s %9s %9s ", "-", "-", "-", "-", "-");
  } else {
    (void)std::fprintf(out, "%9.1f %9.1f %9.1f %9.1f %9.1f ", group.write_latency.percentile_us(50),
                       group.write_latency.percentile_us(99), group.write_latency.max_us,
                       group.ack_latency.percentile_us(50), group.ack_latency.percentile_us(99));
  }
  (void)std::fprintf(out, "%8llu %8llu\n", static_cast<unsigned long long>(group.counters.idle_restarts),
                     static_cast<unsigned long long>(group.counters.heartbeats));
}

}  // namespace

void print_summary_table(std::FILE* out, const LogSummary& summary, const std::string& by) {
  (void)std::fputs("(latencies in microseconds)\n", out);
  (void)std::fprintf(out, "%-20s %6s %8s %9s %9s %9s %9s %9s %9s %8s %8s\n", by.c_str(), "conns", "writes", "bytes",
                     "write p50", "p99", "max", "ack p50", "p99", "idle rst", "hbeats");
  for (const auto& [key, group] : summary.groups) {
    print_row(out, key, group);
  }
  print_row(out, "total", summary.total);
  if (summary.total.unmeasured != 0) {
    (void)std::fprintf(out, "(%llu connection(s) tuned in supervised mode: their writes are not seen, \"-\" above)\n",
                       static_cast<unsigned long long>(summary.total.unmeasured));
  }
  if (const ConnectionGroup& total = summary.total; total.without_record != 0) {
    (void)std::fprintf(out,
                       "(%llu conn_close records dropped (the shim's worker fell behind: dropped_records): conns, "
                       "writes, bytes, idle rst and hbeats are the exact counts of the processes' summaries; the "
                       "latencies cover %llu of %llu connections)\n",
                       static_cast<unsigned long long>(total.without_record),
                       static_cast<unsigned long long>(total.connections - total.without_record),
                       static_cast<unsigned long long>(total.connections));
  }
  if (summary.uncounted_dropped_records != 0) {
    (void)std::fprintf(out,
                       "(%llu record(s) were dropped where no summary counts them (a process that did not exit "
                       "normally, or the supervisor falling behind): the counts above are short)\n",
                       static_cast<unsigned long long>(summary.uncounted_dropped_records));
  }
}

}  // namespace tcptune::cli
