#include "telemetry_records.hpp"

#include <cerrno>

#include "json_writer.hpp"
#include "tcptune/config/rule_matcher.hpp"

namespace tcptune::shim {

namespace {

std::string ack_json(const telemetry::AckLatency& acks) {
  return latency_object_us(acks.histogram)
      .field("resolution_us", static_cast<std::uint64_t>(kAckPollNs / 1000))
      .field("acked_before_first_poll", acks.acked_before_first_poll)
      .str();
}

}  // namespace

telemetry::Record write_record(const WriteEvent& write, const config::Policy& policy) {
  telemetry::Record record(write.slow ? "slow_write" : "write");
  const char* outcome = "ok";
  if (write.result < 0) {
    outcome = write.error == EAGAIN || write.error == EWOULDBLOCK ? "eagain" : "error";
  } else if (static_cast<std::uint64_t>(write.result) < write.offered) {
    outcome = "partial";
  }
  record.add("fd", write.fd)
      .add("rule", config::rule_name(policy, write.rule_index))
      .add("duration_us", static_cast<double>(write.duration_ns) / 1000.0)
      .add("bytes", write.result > 0 ? static_cast<std::uint64_t>(write.result) : std::uint64_t{0})
      .add("offered", write.offered)
      .add("outcome", outcome);
  if (write.result < 0) {
    record.add("errno", write.error);
  }
  if (write.site.depth > 0) {
    record.add_json("callsite", callsite_json(write.site), callsite_text(write.site));
  }
  return record;
}

telemetry::Record idle_restart_record(const IdleRestart& idle, const config::Policy& policy) {
  telemetry::Record record("idle_restart");
  record.add("fd", idle.fd)
      .add("rule", config::rule_name(policy, idle.rule_index))
      .add("idle_ms", static_cast<std::uint64_t>(idle.idle_ms))
      .add("rto_ms", static_cast<double>(idle.rto_us) / 1000.0)
      .add("rtt_ms", static_cast<double>(idle.rtt_us) / 1000.0)
      .add("cwnd_before", static_cast<std::uint64_t>(idle.cwnd_before))
      .add("cwnd_after", static_cast<std::uint64_t>(idle.cwnd_after))
      .add("write_bytes", idle.bytes)
      .add("extra_round_trips", static_cast<std::uint64_t>(idle.extra_round_trips));
  return record;
}

telemetry::Record conn_close_record(const ConnectionSnapshot& snapshot, const telemetry::AckLatency& acks,
                                    const config::Policy& policy) {
  telemetry::Record record = conn_close_record(snapshot, policy);
  record
      .add_json(
          "ack_latency_us", [&] { return ack_json(acks); }, [&] { return latency_text_us(acks.histogram); })
      .add_json_section(
          "ack_latency_hist", [&] { return histogram_buckets_json(acks.histogram); }, [] { return std::string(); });
  return record;
}

telemetry::Record summary_record(const ConnectionTotals& totals, const config::Policy& policy,
                                 const SummaryContext& context) {
  const Totals& all = totals.process();
  telemetry::Record record("summary");
  record.add("connections", all.connections);
  add_counters(record, all.counters);
  record.add_json("write_latency_us", latency_json_us(all.write_latency), latency_text_us(all.write_latency))
      .add_json("ack_latency_us", ack_json(all.acks), latency_text_us(all.acks.histogram))
      .add("dropped_records", context.dropped_records);
  if (context.untuned_in_signal_handlers != 0) {
    record.add("untuned_in_signal_handlers", static_cast<std::uint64_t>(context.untuned_in_signal_handlers));
  }
  record.add("write_clock", context.write_clock_tsc ? "tsc" : "clock_gettime");
  if (context.log_lines_without_descriptor != 0) {
    record.add("log_lines_without_descriptor", context.log_lines_without_descriptor);
  }
  if (context.at_exec) {
    record.add("ended_by", "exec");
  }
  if (context.log_on_stderr) {
    record.add("log_records_dropped", context.log_records_dropped);
  }
  telemetry::JsonArray by_rule;
  std::string text;
  for (std::size_t i = 1; i < totals.row_count(); ++i) {
    const Totals& rule = totals.row(i);
    if (rule.connections == 0) {
      continue;
    }
    const std::string name(config::rule_name(policy, static_cast<int>(i) - 2));
    telemetry::JsonObject entry;
    entry.field("rule", name).field("connections", rule.connections);
    for (const telemetry::CounterField& field : telemetry::kCounterFields) {
      if (field.prometheus_name != nullptr) {
        entry.field(field.record_field, rule.counters.*field.member);
      }
    }
    by_rule.add_raw(entry.raw("write_latency_us", latency_json_us(rule.write_latency)).str());
    text += " " + name + ":connections=" + std::to_string(rule.connections) +
            ",writes=" + std::to_string(rule.counters.writes);
  }
  record.add_json_section("by_rule", by_rule.str(), text);
  return record;
}

}  // namespace tcptune::shim
