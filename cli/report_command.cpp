// tcptune report LOG... [--by rule|peer|program] [--json]: the conn_close records of one or
// more JSON-lines logs, grouped, with write-latency percentiles merged exactly from each
// connection's histogram buckets.
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "commands.hpp"
#include "json_value.hpp"
#include "tcptune/config/units.hpp"

namespace tcptune::cli {

namespace {

struct Group {
  std::uint64_t connections = 0;
  std::uint64_t writes = 0;
  std::uint64_t bytes = 0;
  std::uint64_t partial_writes = 0;
  std::uint64_t would_block = 0;
  std::uint64_t idle_restarts = 0;
  double max_us = 0;
  std::map<std::pair<double, double>, std::uint64_t> buckets;  // [lower, upper) ns -> count

  void add(const JsonValue& record) {
    ++connections;
    writes += static_cast<std::uint64_t>(record.number("writes"));
    bytes += static_cast<std::uint64_t>(record.number("bytes"));
    partial_writes += static_cast<std::uint64_t>(record.number("partial_writes"));
    would_block += static_cast<std::uint64_t>(record.number("eagain"));
    idle_restarts += static_cast<std::uint64_t>(record.number("idle_restarts"));
    if (const JsonValue* latency = record.get("write_latency_us")) {
      max_us = std::max(max_us, latency->number("max"));
    }
    if (const JsonValue* hist = record.get("write_latency_hist")) {
      for (const JsonValue& bucket : hist->array()) {
        const auto& fields = bucket.array();
        if (fields.size() == 3) {
          buckets[{fields[0].number_or(0), fields[1].number_or(0)}] +=
              static_cast<std::uint64_t>(fields[2].number_or(0));
        }
      }
    }
  }
  void merge(const Group& other) {
    connections += other.connections;
    writes += other.writes;
    bytes += other.bytes;
    partial_writes += other.partial_writes;
    would_block += other.would_block;
    idle_restarts += other.idle_restarts;
    max_us = std::max(max_us, other.max_us);
    for (const auto& [bounds, count] : other.buckets) {
      buckets[bounds] += count;
    }
  }
  // Nearest rank over the merged buckets, reported as the shim reports a bucket (2ab/(a+b)).
  [[nodiscard]] double percentile_us(double p) const {
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
};

std::string key_of(const JsonValue& record, const std::string& by) {
  if (by == "peer") {
    std::string peer = record.string("peer", "(unknown)");
    const auto colon = peer.rfind(':');  // the address, without the (ephemeral) port
    return colon == std::string::npos ? peer : peer.substr(0, colon);
  }
  return record.string(by, "(unknown)");
}

std::string latency_json(const Group& group) {
  char text[200];
  (void)std::snprintf(text, sizeof text, R"({"p50":%.3f,"p90":%.3f,"p99":%.3f,"p999":%.3f,"max":%.3f})",
                      group.percentile_us(50), group.percentile_us(90), group.percentile_us(99),
                      group.percentile_us(99.9), group.max_us);
  return text;
}

std::string group_json(const std::string& key, const Group& group) {
  std::string escaped;
  for (const char c : key) {
    if (c == '"' || c == '\\') {
      escaped += '\\';
    }
    escaped += c;
  }
  char text[400];
  (void)std::snprintf(text, sizeof text,
                      R"({"key":"%s","connections":%llu,"writes":%llu,"bytes":%llu,"partial_writes":%llu,)"
                      R"("eagain":%llu,"idle_restarts":%llu,"write_latency_us":%s})",
                      escaped.c_str(), static_cast<unsigned long long>(group.connections),
                      static_cast<unsigned long long>(group.writes), static_cast<unsigned long long>(group.bytes),
                      static_cast<unsigned long long>(group.partial_writes),
                      static_cast<unsigned long long>(group.would_block),
                      static_cast<unsigned long long>(group.idle_restarts), latency_json(group).c_str());
  return text;
}

void print_row(const std::string& key, const Group& group) {
  std::printf("%-24s %6llu %9llu %10s %10.1f %10.1f %10.1f %10.1f %8llu\n", key.c_str(),
              static_cast<unsigned long long>(group.connections), static_cast<unsigned long long>(group.writes),
              config::format_size(group.bytes).c_str(), group.percentile_us(50), group.percentile_us(90),
              group.percentile_us(99), group.max_us, static_cast<unsigned long long>(group.idle_restarts));
}

int usage() {
  (void)std::fputs("usage: tcptune report LOG... [--by rule|peer|program] [--json]\n", stderr);
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
  if (by == "callsite") {
    (void)std::fputs("tcptune report: call sites are not recorded yet (callsite = true is not built)\n", stderr);
    return kExitUsage;
  }
  if (files.empty() || (by != "rule" && by != "peer" && by != "program")) {
    return usage();
  }
  std::map<std::string, Group> groups;
  std::uint64_t skipped = 0;
  std::uint64_t records = 0;
  for (const std::string& file : files) {
    std::ifstream in(file);
    if (!in) {
      (void)std::fprintf(stderr, "tcptune report: cannot read %s\n", file.c_str());
      return 1;
    }
    std::string line;
    while (std::getline(in, line)) {
      std::string error;
      const auto record = parse_json(line, error);
      if (!record || !record->is_object()) {
        ++skipped;  // a text log line, or the last line of a log cut by kill -9
        continue;
      }
      ++records;
      if (record->string("event") == "conn_close") {
        groups[key_of(*record, by)].add(*record);
      }
    }
  }
  Group total;
  for (const auto& [key, group] : groups) {
    total.merge(group);
  }
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
  std::printf("%-24s %6s %9s %10s %10s %10s %10s %10s %8s\n", by.c_str(), "conns", "writes", "bytes", "write p50",
              "p90", "p99", "max (us)", "idle rst");
  for (const auto& [key, group] : groups) {
    print_row(key, group);
  }
  print_row("total", total);
  std::printf("%llu records from %zu file(s)", static_cast<unsigned long long>(records), files.size());
  if (skipped != 0) {
    std::printf("; %llu line(s) skipped (not JSON: a text log, or a line cut by kill -9)",
                static_cast<unsigned long long>(skipped));
  }
  std::printf("\n");
  return 0;
}

}  // namespace tcptune::cli
