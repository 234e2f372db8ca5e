#include "process_lifetimes.hpp"

#include <algorithm>

#include "log_record.hpp"

namespace tcptune::cli {

namespace {

constexpr std::size_t kCounterCount = std::size(telemetry::kCounterFields);

CountedConnections& operator+=(CountedConnections& into, const CountedConnections& more) {
  into.connections += more.connections;
  into.counters += more.counters;
  return into;
}

// A record's connections (1 for conn_close) and counters; `absent` marks the counters it lacks.
CountedConnections counted_in(const nlohmann::json& record, std::uint64_t connections,
                              std::vector<bool>* absent = nullptr) {
  CountedConnections counted{connections, {}};
  for (std::size_t i = 0; i < kCounterCount; ++i) {
    const telemetry::CounterField& field = telemetry::kCounterFields[i];
    counted.counters.*field.member = count_field(record, field.record_field);
    if (absent != nullptr && !record.contains(field.record_field)) {
      (*absent)[i] = true;
    }
  }
  return counted;
}

// What a summary counts beyond the records, field by field and never below zero: records a
// summary does not know of (from a lifetime whose start is in a file not given) are not taken
// off other counts. A counter the summary lacks (an older shim's by_rule) adds nothing.
CountedConnections beyond(const CountedConnections& summary, const CountedConnections& recorded,
                          const std::vector<bool>& absent) {
  CountedConnections missing;
  missing.connections = summary.connections > recorded.connections ? summary.connections - recorded.connections : 0;
  for (std::size_t i = 0; i < kCounterCount; ++i) {
    const auto member = telemetry::kCounterFields[i].member;
    if (!absent[i] && summary.counters.*member > recorded.counters.*member) {
      missing.counters.*member = summary.counters.*member - recorded.counters.*member;
    }
  }
  return missing;
}

bool is_zero(const CountedConnections& counted) {
  if (counted.connections != 0) {
    return false;
  }
  return std::all_of(std::begin(telemetry::kCounterFields), std::end(telemetry::kCounterFields),
                     [&](const telemetry::CounterField& field) { return counted.counters.*field.member == 0; });
}

std::int64_t pid_of(const nlohmann::json& record) {
  return static_cast<std::int64_t>(count_field(record, "pid"));
}

}  // namespace

void ProcessLifetimes::add_start(const nlohmann::json& start) {
  starts_[pid_of(start)].push_back(string_field(start, "ts"));
  starts_sorted_ = false;
}

ProcessLifetimes::Lifetime& ProcessLifetimes::lifetime_of(const nlohmann::json& record) {
  if (!starts_sorted_) {
    for (auto& [pid, times] : starts_) {
      std::sort(times.begin(), times.end());
    }
    starts_sorted_ = true;
  }
  const std::int64_t pid = pid_of(record);
  std::size_t started = 0;
  if (const auto found = starts_.find(pid); found != starts_.end()) {
    // ISO 8601 UTC times with microseconds, as the shim writes them, sort as strings.
    const std::vector<std::string>& times = found->second;
    started = static_cast<std::size_t>(std::upper_bound(times.begin(), times.end(), string_field(record, "ts")) -
                                       times.begin());
  }
  return lifetimes_[{pid, started}];
}

void ProcessLifetimes::add(const nlohmann::json& record) {
  const std::string event = string_field(record, "event");
  if (event == "conn_close") {
    Lifetime& lifetime = lifetime_of(record);
    const CountedConnections one = counted_in(record, 1);
    lifetime.recorded += one;
    lifetime.recorded_by_rule[string_field(record, "rule", "(unknown)")] += one;
  } else if (event == "summary") {
    lifetime_of(record).summaries.push_back(record);
  } else if (event == "dropped") {
    lifetime_of(record).dropped += count_field(record, "records");
  } else if (event == "supervisor_summary") {
    supervisor_dropped_ += count_field(record, "records_dropped");
  }
}

MissingRecords ProcessLifetimes::missing(const std::string& by) const {
  MissingRecords out;
  out.uncounted_dropped = supervisor_dropped_;
  for (const auto& [key, lifetime] : lifetimes_) {
    if (lifetime.summaries.empty()) {
      out.uncounted_dropped += lifetime.dropped;
      continue;
    }
    CountedConnections counted;
    std::vector<bool> absent(kCounterCount, false);
    std::map<std::string, CountedConnections> counted_by_rule;
    std::map<std::string, std::vector<bool>> absent_by_rule;
    bool has_by_rule = false;
    for (const nlohmann::json& summary : lifetime.summaries) {
      counted += counted_in(summary, count_field(summary, "connections"), &absent);
      const auto rules = summary.find("by_rule");
      if (rules == summary.end() || !rules->is_array()) {
        continue;
      }
      has_by_rule = true;
      for (const nlohmann::json& entry : *rules) {
        if (entry.is_object()) {
          const std::string rule = string_field(entry, "rule", "(unknown)");
          std::vector<bool>& rule_absent = absent_by_rule.try_emplace(rule, kCounterCount, false).first->second;
          counted_by_rule[rule] += counted_in(entry, count_field(entry, "connections"), &rule_absent);
        }
      }
    }
    const CountedConnections missing = beyond(counted, lifetime.recorded, absent);
    if (is_zero(missing)) {
      continue;
    }
    out.total += missing;
    if (by == "rule" && has_by_rule) {
      for (const auto& [rule, rule_counted] : counted_by_rule) {
        const auto recorded = lifetime.recorded_by_rule.find(rule);
        const CountedConnections rule_missing =
            beyond(rule_counted, recorded == lifetime.recorded_by_rule.end() ? CountedConnections{} : recorded->second,
                   absent_by_rule.at(rule));
        if (!is_zero(rule_missing)) {
          out.by_group[rule] += rule_missing;
        }
      }
    } else if (by == "program") {
      out.by_group[string_field(lifetime.summaries.front(), "program", "(unknown)")] += missing;
    } else {
      out.by_group[kNoRecordGroup] += missing;
    }
  }
  return out;
}

}  // namespace tcptune::cli
