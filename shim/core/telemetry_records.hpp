// The records the worker writes, built from what the app's threads handed over and the
// worker's sums: write and slow_write, idle_restart, conn_close with its ack latencies, and the
// exit summary. Pure functions of their inputs (no thread, no global), so each record's fields
// can be checked directly.
#pragma once

#include <cstdint>
#include <string>

#include "ack_sampler.hpp"
#include "callsite.hpp"
#include "connection_summary.hpp"
#include "connection_totals.hpp"
#include "idle_restart.hpp"
#include "record.hpp"
#include "tcptune/config/policy.hpp"

namespace tcptune::shim {

// One write for a slow_write or write record.
struct WriteEvent {
  int fd = -1;
  std::int16_t rule_index = kRuleDefaults;
  bool slow = false;
  std::int64_t duration_ns = 0;
  std::int64_t result = 0;
  std::uint64_t offered = 0;
  int error = 0;
  CallSite site;  // slow writes on connections with callsite = true
};

telemetry::Record write_record(const WriteEvent& write, const config::Policy& policy);
telemetry::Record idle_restart_record(const IdleRestart& idle, const config::Policy& policy);
// conn_close, with the connection's ack latencies.
telemetry::Record conn_close_record(const ConnectionSnapshot& snapshot, const telemetry::AckLatency& acks,
                                    const config::Policy& policy);

// What the summary says beyond the totals.
struct SummaryContext {
  std::uint64_t dropped_records = 0;
  unsigned long untuned_in_signal_handlers = 0;
  bool write_clock_tsc = false;
  bool log_on_stderr = false;
  std::uint64_t log_records_dropped = 0;           // by stderr, before the summary (shim_log.hpp)
  bool at_exec = false;                            // written as an exec replaces the process image
  std::uint64_t log_lines_without_descriptor = 0;  // shim_log.hpp
};
telemetry::Record summary_record(const ConnectionTotals& totals, const config::Policy& policy,
                                 const SummaryContext& context);

}  // namespace tcptune::shim
