// The exact counts of a log's processes, for what their conn_close records miss. A record the
// shim's worker could not keep up with is dropped (`dropped_records`), but the process's
// `summary` still counts its connection, writes, bytes, idle restarts and heartbeats, per rule
// (`by_rule`). Each lifetime of a process (from its `start` record, found by pid and time, so
// that files given in any order, such as rotated logs newest first, still match) has its
// conn_close rows added up here; a lifetime whose summary counts more than its rows hold gives
// the difference to the report as connections without a record: counted exactly, without
// latencies or TCP_INFO.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "connection_counters.hpp"

namespace tcptune::cli {

// Connections and their counters, as a summary or a sum of conn_close records gives them.
struct CountedConnections {
  std::uint64_t connections = 0;
  telemetry::ConnectionCounters counters;
};

// What the summaries count beyond the conn_close records of their lifetimes.
struct MissingRecords {
  // Per group: by rule from `by_rule`, by program from the summary's program, and for "peer"
  // (which no summary knows) all under kNoRecordGroup.
  std::map<std::string, CountedConnections> by_group;
  CountedConnections total;
  // Records reported dropped where no summary makes up for them (the counts are short by an
  // unknown amount): `dropped` records of a lifetime without a summary (killed before its
  // exit), and a supervisor's `records_dropped`.
  std::uint64_t uncounted_dropped = 0;
};

class ProcessLifetimes {
 public:
  static constexpr const char* kNoRecordGroup = "(no record)";

  // First every `start` record of the files, then every record (start records again too).
  void add_start(const nlohmann::json& start);
  void add(const nlohmann::json& record);

  [[nodiscard]] MissingRecords missing(const std::string& by) const;

 private:
  struct Lifetime {
    std::map<std::string, CountedConnections> recorded_by_rule;  // its conn_close records
    CountedConnections recorded;
    std::vector<nlohmann::json> summaries;
    std::uint64_t dropped = 0;  // from `dropped` records
  };
  Lifetime& lifetime_of(const nlohmann::json& record);

  std::map<std::int64_t, std::vector<std::string>> starts_;  // pid -> its start records' times
  bool starts_sorted_ = false;
  // By (pid, the number of its start records up to the record's time).
  std::map<std::pair<std::int64_t, std::size_t>, Lifetime> lifetimes_;
  std::uint64_t supervisor_dropped_ = 0;
};

}  // namespace tcptune::cli
