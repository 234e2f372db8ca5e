// A connection's measurements, frozen when it closes (or when the process exits with it
// open), and the conn_close record the worker makes of them. Taking the snapshot is
// async-signal-safe (no lock, no allocation: a snapshot travels in the worker's ring, and its
// write latencies, when it wrote, in a histogram from a fixed pool), because close() may be
// called anywhere; formatting it happens on the worker thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "connection_counters.hpp"
#include "json_writer.hpp"
#include "latency_histogram.hpp"
#include "monotonic_clock.hpp"
#include "pending_open.hpp"
#include "record.hpp"
#include "socket_slot.hpp"
#include "tcp_info_reader.hpp"
#include "tcptune/config/cidr.hpp"
#include "tcptune/config/policy.hpp"

namespace tcptune::shim {

// What an exec of the process did to a connection summarized just before it: closed it
// (FD_CLOEXEC), or left it open for the program exec'd, which measures it from then on.
enum class AtExec : std::uint8_t { none, closed, inherited };

struct ConnectionSnapshot {
  int fd = -1;
  std::uint32_t generation = 0;
  SocketRole role = SocketRole::unknown;
  std::int16_t rule_index = kRuleDefaults;
  bool open_at_exit = false;
  AtExec at_exec = AtExec::none;
  std::int64_t opened_ns = 0;
  std::int64_t closed_ns = 0;
  telemetry::ConnectionCounters counters;
  std::uint32_t histogram_lost_carries = 0;
  // Out of line, and only for a connection that wrote: 1.5 KiB written by the closing thread
  // and read by the worker. nullptr stands for an empty one.
  telemetry::LatencyHistogram* write_latency = nullptr;
  [[nodiscard]] const telemetry::LatencyHistogram& gathered_write_latency() const noexcept {
    static const telemetry::LatencyHistogram none;
    return write_latency != nullptr ? *write_latency : none;
  }
  std::optional<TcpInfoSummary> tcp_info;
  config::Endpoint local;
  config::Endpoint peer;
  FramingLoss framing_loss = FramingLoss::none;  // why keep-warm ended, if it did
  // A client's conn_open still waiting for its connect (pending_open.hpp), the snapshot's to
  // write before the conn_close; nullptr when written already.
  PendingOpen* pending_open = nullptr;
};

// Fills `out` from the slot's connection `generation` and the kernel (TCP_INFO; the endpoints
// kept since its conn_open, else the kernel's), and takes its pending conn_open. Its write
// latencies go to `write_latency`, if given (none without one; give one where it wrote).
// Preserves errno; no lock, no allocation.
void take_snapshot(int fd, SocketSlot& slot, std::uint32_t generation, bool open_at_exit, ConnectionSnapshot& out,
                   telemetry::LatencyHistogram* write_latency) noexcept;
// Whether the slot's connection wrote, so that its snapshot needs a histogram.
[[nodiscard]] bool wrote_anything(const SocketSlot& slot) noexcept;

// {"p50","p90","p99","p999","max"} in microseconds, and its text form.
telemetry::JsonObject latency_object_us(const telemetry::LatencyHistogram& histogram);
std::string latency_json_us(const telemetry::LatencyHistogram& histogram);
std::string latency_text_us(const telemetry::LatencyHistogram& histogram);
// [[lower_ns, upper_ns, count], ...] for the non-empty buckets: enough for a reader to merge
// connections' histograms exactly (tcptune report does).
std::string histogram_buckets_json(const telemetry::LatencyHistogram& histogram);

// Every counter, under its record field name, in kCounterFields order.
void add_counters(telemetry::Record& record, const telemetry::ConnectionCounters& counters);

telemetry::Record conn_close_record(const ConnectionSnapshot& snapshot, const config::Policy& policy);

}  // namespace tcptune::shim
