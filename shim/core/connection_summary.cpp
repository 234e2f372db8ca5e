#include "connection_summary.hpp"

#include <cstdio>

#include "connection_names.hpp"
#include "connection_record.hpp"
#include "errno_saver.hpp"
#include "json_writer.hpp"
#include "record.hpp"
#include "socket_probe.hpp"
#include "tcptune/config/rule_matcher.hpp"

namespace tcptune::shim {

namespace {

double us(double ns) {
  return ns / 1000.0;
}

}  // namespace

bool wrote_anything(const SocketSlot& slot) noexcept {
  return slot.stats.counters.writes.load(std::memory_order_relaxed) != 0;
}

void take_snapshot(int fd, SocketSlot& slot, std::uint32_t generation, bool open_at_exit, ConnectionSnapshot& out,
                   telemetry::LatencyHistogram* write_latency) noexcept {
  const ErrnoSaver saver;
  const telemetry::ConnectionStats& stats = slot.stats;
  out.fd = fd;
  out.generation = generation;
  out.role = slot.role.load(std::memory_order_relaxed);
  out.rule_index = slot.rule_index.load(std::memory_order_relaxed);
  out.open_at_exit = open_at_exit;
  out.at_exec = AtExec::none;
  out.opened_ns = stats.opened_ns.load(std::memory_order_relaxed);
  out.closed_ns = monotonic_ns();
  out.counters = stats.counters.load();
  out.histogram_lost_carries = stats.carries.lost();
  // Given one, it is used even if the counts read now say no write (another thread's exec may
  // have reset them since the caller looked): the caller gets it back with the snapshot. Without
  // one, a write that raced this close from another thread goes unmeasured.
  out.write_latency = write_latency;
  if (out.write_latency != nullptr) {
    *out.write_latency = telemetry::LatencyHistogram();
    stats.write_latency_into(*out.write_latency);
  }
  out.tcp_info = read_tcp_info(fd);
  const ConnectionNames* names = names_if_any(slot);
  if (names == nullptr || !names->load(generation, out.local, out.peer)) {
    out.local = local_endpoint(fd);
    out.peer = peer_endpoint(fd);
  }
  out.framing_loss = slot.framer.loss();
  out.pending_open = take_pending_open(slot, generation);
  if (out.peer.family == 0 && out.pending_open != nullptr) {
    out.peer = out.pending_open->connect_peer;  // closed while connecting: the peer it was meant for
  }
}

telemetry::JsonObject latency_object_us(const telemetry::LatencyHistogram& histogram) {
  telemetry::JsonObject object;
  object.field("count", histogram.count())
      .field("p50", us(histogram.percentile_ns(50)))
      .field("p90", us(histogram.percentile_ns(90)))
      .field("p99", us(histogram.percentile_ns(99)))
      .field("p999", us(histogram.percentile_ns(99.9)))
      .field("max", us(static_cast<double>(histogram.max_ns())));
  return object;
}

std::string latency_json_us(const telemetry::LatencyHistogram& histogram) {
  return latency_object_us(histogram).str();
}

std::string latency_text_us(const telemetry::LatencyHistogram& histogram) {
  char text[160];
  (void)std::snprintf(text, sizeof text, "p50=%.1f,p90=%.1f,p99=%.1f,p999=%.1f,max=%.1f",
                      us(histogram.percentile_ns(50)), us(histogram.percentile_ns(90)), us(histogram.percentile_ns(99)),
                      us(histogram.percentile_ns(99.9)), us(static_cast<double>(histogram.max_ns())));
  return text;
}

std::string histogram_buckets_json(const telemetry::LatencyHistogram& histogram) {
  telemetry::JsonArray buckets;
  if (histogram.count() == 0) {
    return buckets.str();  // every bucket empty: most connections' ack latencies, and those that wrote nothing
  }
  for (int bucket = 0; bucket < telemetry::HistogramLayout::kBuckets; ++bucket) {
    if (const std::uint64_t count = histogram.bucket_count(bucket); count != 0) {
      char entry[96];
      (void)std::snprintf(entry, sizeof entry, "[%.0f,%.0f,%llu]", telemetry::HistogramLayout::lower_bound(bucket),
                          telemetry::HistogramLayout::upper_bound(bucket), static_cast<unsigned long long>(count));
      buckets.add_raw(entry);
    }
  }
  return buckets.str();
}

void add_counters(telemetry::Record& record, const telemetry::ConnectionCounters& counters) {
  for (const telemetry::CounterField& field : telemetry::kCounterFields) {
    record.add(field.record_field, counters.*field.member);
  }
}

telemetry::Record conn_close_record(const ConnectionSnapshot& snapshot, const config::Policy& policy) {
  telemetry::Record record("conn_close");
  record.add("fd", snapshot.fd)
      .add("role", role_name(snapshot.role))
      .add("rule", config::rule_name(policy, snapshot.rule_index));
  if (snapshot.local.family != 0 && !config::is_unspecified(snapshot.local)) {  // never connected: none
    record.add("local", config::format_endpoint(snapshot.local));
  }
  if (snapshot.peer.family != 0) {
    record.add("peer", config::format_endpoint(snapshot.peer));
  }
  record.add("open_at_exit", snapshot.open_at_exit);
  if (snapshot.at_exec != AtExec::none) {
    record.add("at_exec", snapshot.at_exec == AtExec::closed ? "closed" : "inherited");
  }
  record.add("duration_s", static_cast<double>(snapshot.closed_ns - snapshot.opened_ns) / 1e9);
  add_counters(record, snapshot.counters);
  if (snapshot.framing_loss != FramingLoss::none) {
    record.add("keep_warm_ended_by", framing_loss_name(snapshot.framing_loss));
  }
  const telemetry::LatencyHistogram& write_latency = snapshot.gathered_write_latency();
  record
      .add_json(
          "write_latency_us", [&] { return latency_json_us(write_latency); },
          [&] { return latency_text_us(write_latency); })
      .add_json_section(
          "write_latency_hist", [&] { return histogram_buckets_json(write_latency); }, [] { return std::string(); });
  if (snapshot.histogram_lost_carries != 0) {
    record.add("write_latency_undercounted", static_cast<std::uint64_t>(snapshot.histogram_lost_carries) *
                                                 telemetry::ConnectionWriteHistogram::kCarryUnit);
  }
  if (snapshot.tcp_info) {
    add_tcp_info(record, *snapshot.tcp_info);
  }
  return record;
}

}  // namespace tcptune::shim
