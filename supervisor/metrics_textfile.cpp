#include "metrics_textfile.hpp"

#include <cstdio>
#include <vector>

#include "monotonic_clock.hpp"
#include "prometheus_textfile.hpp"
#include "record.hpp"
#include "tcptune/config/log_destination.hpp"
#include "tcptune/config/rule_matcher.hpp"

namespace tcptune::supervisor {

MetricsTextfile::MetricsTextfile(const config::Policy& policy, SupervisorLog& log, const std::string& program,
                                 pid_t child)
    : policy_(policy), log_(log), program_(program), child_(child) {
  if (!policy_.log.prometheus_textfile.empty()) {
    path_ = config::expand_log_path(policy_.log.prometheus_textfile, program_, child_);
  }
}

void MetricsTextfile::tick(const ConnectionWatch& watch, std::uint64_t dropped_records) {
  const std::int64_t now_ns = shim::monotonic_ns();
  if (path_.empty() || now_ns < next_write_ns_) {
    return;
  }
  write(watch, dropped_records);
  next_write_ns_ = now_ns + policy_.log.interval.count();
}

void MetricsTextfile::write(const ConnectionWatch& watch, std::uint64_t dropped_records) {
  if (path_.empty()) {
    return;
  }
  try {
    // Rows in the shim's order: the defaults, then the rules as the policy lists them.
    std::vector<telemetry::MetricsRow> rows;
    for (const auto& [rule, counts] : watch.counts_by_rule()) {
      telemetry::MetricsRow& row = rows.emplace_back();
      row.rule = config::rule_name(policy_, rule);
      row.connections = counts.connections;
      row.counters.idle_restarts = counts.idle_restarts;
    }
    std::string text =
        telemetry::render_prometheus(rows, program_, dropped_records, telemetry::MetricsSource::supervisor);
    if (log_.on_stderr()) {
      text += telemetry::render_log_drops(program_, log_.drops());
    }
    const std::string error = telemetry::write_file_atomically(path_, text);
    if (error.empty() || error_reported_) {
      return;
    }
    error_reported_ = true;
    const std::string message = error + " (logged once)";
    (void)std::fprintf(stderr, "tcptune: %s\n", message.c_str());
    telemetry::Record record("supervisor_warning");
    record.add("message", message);
    log_.write(config::LogLevel::warn, child_, program_, record);
  } catch (...) {
    // out of memory: this rewrite is skipped, the next one tries again
  }
}

}  // namespace tcptune::supervisor
