#include "metrics_textfile.hpp"

#include <chrono>
#include <cstdio>

#include "monotonic_clock.hpp"
#include "record.hpp"
#include "tcptune/config/log_destination.hpp"
#include "tcptune/config/rule_matcher.hpp"

namespace tcptune::supervisor {

namespace {
// How long the last write waits for other processes' merges (each about a millisecond).
constexpr std::chrono::milliseconds kLastWriteLockWait{1000};
// When another process is merging, the records thread tries again after this.
constexpr std::int64_t kRetryNs = 10'000'000;
}  // namespace

MetricsTextfile::MetricsTextfile(const config::Policy& policy, SupervisorLog& log, const std::string& program,
                                 pid_t child, const std::string& arm)
    : policy_(policy), log_(log), program_(program), child_(child), arm_(arm), merged_(telemetry::plain_file_calls()) {
  if (!policy_.log.prometheus_textfile.empty()) {
    path_ = config::expand_log_path(policy_.log.prometheus_textfile, program_, child_);
  }
}

void MetricsTextfile::tick(const ConnectionWatch& watch, const CallRecords& records, std::uint64_t dropped_records) {
  const std::int64_t now_ns = shim::monotonic_ns();
  if (path_.empty() || now_ns < next_write_ns_) {
    return;
  }
  const bool written = write(watch, records, dropped_records, false);
  next_write_ns_ = now_ns + (written ? policy_.log.interval.count() : kRetryNs);
}

void MetricsTextfile::write_last(const ConnectionWatch& watch, const CallRecords& records,
                                 std::uint64_t dropped_records) {
  if (!path_.empty()) {
    (void)write(watch, records, dropped_records, true);
  }
}

bool MetricsTextfile::write(const ConnectionWatch& watch, const CallRecords& records, std::uint64_t dropped_records,
                            bool leaving) {
  try {
    // Rows in the shim's order: the defaults, then the rules as the policy lists them.
    std::vector<telemetry::MetricsRow> rows;
    for (const auto& [rule, counts] : watch.counts_by_rule()) {
      telemetry::MetricsRow& row = rows.emplace_back();
      row.rule = config::rule_name(policy_, rule);
      row.connections = counts.connections;
      row.counters.idle_restarts = counts.idle_restarts;
    }
    telemetry::MetricsContext context;
    context.program = program_;
    context.arm = arm_;
    context.source = telemetry::MetricsSource::supervisor;
    context.dropped_records = dropped_records;
    context.option_misses = records.option_misses();
    context.log_on_stderr = log_.on_stderr();
    context.log_drops = log_.drops();
    if (const std::string warning = telemetry::per_process_pattern_warning(policy_.log.prometheus_textfile);
        !warning.empty()) {
      report_once(pattern_reported_, warning);
    }
    const auto result = merged_.write(path_, telemetry::render_prometheus(rows, context), leaving,
                                      leaving ? kLastWriteLockWait : std::chrono::milliseconds(0));
    if (!result.started_over.empty()) {
      report_once(start_over_reported_, result.started_over);
    }
    if (result.outcome == telemetry::MergedTextfile::Outcome::failed) {
      report_once(error_reported_, result.error);
    }
    return result.outcome != telemetry::MergedTextfile::Outcome::busy;
  } catch (...) {
    return true;  // out of memory: this rewrite is skipped, the next one tries again
  }
}

void MetricsTextfile::report_once(bool& reported, const std::string& message_text) {
  if (reported) {
    return;
  }
  reported = true;
  const std::string message = message_text + " (logged once)";
  (void)std::fprintf(stderr, "tcptune: %s\n", message.c_str());
  telemetry::Record record("supervisor_warning");
  record.add("message", message);
  log_.write(config::LogLevel::warn, child_, program_, record);
}

}  // namespace tcptune::supervisor
