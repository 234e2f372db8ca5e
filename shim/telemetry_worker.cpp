#include "telemetry_worker.hpp"

#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <ctime>
#include <new>
#include <vector>

#include "ack_sampler.hpp"
#include "callsite.hpp"
#include "connection_summary.hpp"
#include "connection_totals.hpp"
#include "errno_saver.hpp"
#include "event_ring.hpp"
#include "fd_table.hpp"
#include "idle_restart.hpp"
#include "json_writer.hpp"
#include "keep_warm_scheduler.hpp"
#include "process_runtime.hpp"
#include "prometheus_textfile.hpp"
#include "record.hpp"
#include "shim_log.hpp"
#include "signal_context.hpp"
#include "snapshot_pool.hpp"
#include "tcptune/config/rule_matcher.hpp"
#include "write_clock.hpp"

namespace tcptune::shim {

namespace {

using config::LogLevel;

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

// A log line from an app thread (conn_open, a veto, a warning), already formatted.
struct DeferredLine {
  config::LogLevel level;
  std::string text;
};

// A closed connection's snapshot, an idle restart, an ack sample, a write, a line, or a
// connection to keep warm.
struct TelemetryEvent {
  enum class Kind : std::uint8_t { closed, idle_restart, ack_sample, write, line, keep_warm } kind = Kind::line;
  ConnectionSnapshot* snapshot = nullptr;
  IdleRestart idle{};
  AckSample ack{};
  WriteEvent write{};
  DeferredLine* line = nullptr;
  WarmConnection warm{};
};

WriteReporting g_write_reporting;

void handle_write(const WriteEvent& write, const Runtime& runtime) {
  telemetry::Record record(write.slow ? "slow_write" : "write");
  const char* outcome = "ok";
  if (write.result < 0) {
    outcome = write.error == EAGAIN || write.error == EWOULDBLOCK ? "eagain" : "error";
  } else if (static_cast<std::uint64_t>(write.result) < write.offered) {
    outcome = "partial";
  }
  record.add("fd", write.fd)
      .add("rule", config::rule_name(*runtime.policy, write.rule_index))
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
  log_record(write.slow ? LogLevel::warn : LogLevel::info, record);
}

// How long the worker sleeps with nothing to poll: new samples wait at most this long.
constexpr std::int64_t kIdleSleepNs = 20'000'000;

AckSampler* g_acks = nullptr;
ConnectionTotals* g_totals = nullptr;
KeepWarmScheduler* g_keep_warm = nullptr;

// Bounded memory: 128 snapshots of about 3 KiB and 2048 events of about 250 bytes (in .bss,
// touched only as used) wait for the worker, which drains every 1 to 20 ms.
telemetry::EventRing<TelemetryEvent, 2048> g_ring;
telemetry::SnapshotPool<ConnectionSnapshot, 128> g_pool;
std::atomic<std::uint64_t> g_pool_exhausted{0};

enum class WorkerState : int { not_started, starting, running, stopped };
std::atomic<WorkerState> g_state{WorkerState::not_started};
std::atomic<std::uint32_t> g_wake{0};
pthread_t g_thread;

std::uint64_t g_dropped_total = 0;

void handle_idle_restart(const IdleRestart& idle, const Runtime& runtime) {
  telemetry::Record record("idle_restart");
  record.add("fd", idle.fd)
      .add("rule", config::rule_name(*runtime.policy, idle.rule_index))
      .add("idle_ms", static_cast<std::uint64_t>(idle.idle_ms))
      .add("rto_ms", static_cast<double>(idle.rto_us) / 1000.0)
      .add("rtt_ms", static_cast<double>(idle.rtt_us) / 1000.0)
      .add("cwnd_before", static_cast<std::uint64_t>(idle.cwnd_before))
      .add("cwnd_after", static_cast<std::uint64_t>(idle.cwnd_after))
      .add("write_bytes", idle.bytes)
      .add("extra_round_trips", static_cast<std::uint64_t>(idle.extra_round_trips));
  log_record(LogLevel::info, record);  // counted from the connection's own count, at its close
}

std::string ack_json(const AckLatency& acks) {
  return latency_object_us(acks.histogram)
      .field("resolution_us", static_cast<std::uint64_t>(kAckPollNs / 1000))
      .field("acked_before_first_poll", acks.acked_before_first_poll)
      .str();
}

void handle(const ConnectionSnapshot& snapshot, const Runtime& runtime) {
  telemetry::Record record = conn_close_record(snapshot, *runtime.policy);
  const AckLatency acks = g_acks->take(snapshot.fd, snapshot.generation);
  record.add_json("ack_latency_us", ack_json(acks), latency_text_us(acks.histogram))
      .add_json_section("ack_latency_hist", histogram_buckets_json(acks.histogram), "");
  if (runtime.policy->log.summary) {
    log_record(LogLevel::info, record);
  }
  g_totals->add_closed(snapshot, acks);
}

void report_drops() {
  const std::uint64_t dropped = g_ring.take_dropped() + g_pool_exhausted.exchange(0, std::memory_order_relaxed);
  if (dropped != 0) {
    g_dropped_total += dropped;
    telemetry::Record record("dropped");
    record.add("records", dropped).add("reason", "the telemetry worker fell behind; conn_close records lost");
    log_record(LogLevel::warn, record);
  }
}

void drain(const Runtime& runtime) {
  TelemetryEvent event{};
  while (g_ring.try_pop(event)) {
    try {
      switch (event.kind) {
        case TelemetryEvent::Kind::closed: handle(*event.snapshot, runtime); break;
        case TelemetryEvent::Kind::idle_restart: handle_idle_restart(event.idle, runtime); break;
        case TelemetryEvent::Kind::ack_sample: g_acks->add(event.ack); break;
        case TelemetryEvent::Kind::write: handle_write(event.write, runtime); break;
        case TelemetryEvent::Kind::line: write_deferred_line(event.line->level, event.line->text); break;
        case TelemetryEvent::Kind::keep_warm: g_keep_warm->add(event.warm, monotonic_ns()); break;
      }
    } catch (...) {
      // Out of memory while formatting: the record is lost, the app is not.
    }
    if (event.snapshot != nullptr) {
      g_pool.release(event.snapshot);
    }
    delete event.line;
  }
  g_totals->absorb_unrecorded();
  report_drops();
}

// The textfile: closed connections' totals plus what open ones have measured so far, so that
// counters move while connections live and never go back when they close.
void write_prometheus_textfile(const Runtime& runtime) {
  const std::string& pattern = runtime.policy->log.prometheus_textfile;
  if (pattern.empty()) {
    return;
  }
  std::vector<MetricsRow> rows(g_totals->row_count());
  for (std::size_t i = 1; i < rows.size(); ++i) {
    const Totals& closed = g_totals->row(i);
    MetricsRow& row = rows[i];
    row.rule = config::rule_name(*runtime.policy, static_cast<int>(i) - 2);
    row.connections = closed.connections;
    row.counters = closed.counters;
    row.write_latency.merge(closed.write_latency);
    row.acks = closed.acks;
  }
  fd_table().for_each_tcp([&](int fd, const SocketSlot& slot) {
    const auto index = static_cast<std::size_t>(slot.rule_index.load(std::memory_order_relaxed) + 2);
    if (!slot.has_flag(flag_measured) || index >= rows.size()) {
      return;
    }
    MetricsRow& row = rows[index];
    ++row.connections;
    row.counters += slot.stats.counters.load();
    slot.stats.write_latency_into(row.write_latency);
    g_acks->add_open_to(fd, slot.generation.load(std::memory_order_acquire), row.acks);
  });
  std::erase_if(rows, [](const MetricsRow& row) { return row.connections == 0; });
  const std::string error = write_file_atomically(expand_log_path(pattern, runtime.program, getpid()),
                                                  render_prometheus(rows, runtime.program, g_dropped_total));
  if (!error.empty() && log_first_time("prometheus_textfile")) {
    log_message(LogLevel::warn, error + " (logged once)");
  }
}

// Set while the worker sleeps with closed connections possibly waiting: the first close
// after it wakes the worker, so a burst of closes finds snapshots free (one futex wake per
// sleep at most; async-signal-safe).
std::atomic<bool> g_worker_sleeping{false};

void wait_for_wake(std::uint32_t seen, std::int64_t ns) {
  timespec timeout{0, static_cast<long>(ns)};
  g_worker_sleeping.store(true, std::memory_order_seq_cst);
  syscall(SYS_futex, &g_wake, FUTEX_WAIT_PRIVATE, seen, &timeout, nullptr, 0);
  g_worker_sleeping.store(false, std::memory_order_relaxed);
}

void wake_sleeping_worker() noexcept {
  if (g_worker_sleeping.load(std::memory_order_relaxed) &&
      g_worker_sleeping.exchange(false, std::memory_order_acq_rel)) {
    const int saved = errno;
    g_wake.fetch_add(1, std::memory_order_release);
    syscall(SYS_futex, &g_wake, FUTEX_WAKE_PRIVATE, 1, nullptr, nullptr, 0);
    errno = saved;
  }
}

bool defer_line(config::LogLevel level, std::string&& text) {
  auto* line = new DeferredLine{level, std::move(text)};
  if (g_state.load(std::memory_order_acquire) == WorkerState::running &&
      g_ring.try_push({.kind = TelemetryEvent::Kind::line, .line = line}, /*counted=*/false)) {
    return true;
  }
  delete line;
  return false;
}

void* worker_main(void* /*unused*/) {
  mark_log_worker_thread();
  const Runtime* runtime = active_runtime();
  WriteClockCalibrator write_clock_calibrator(g_write_clock, tsc_trusted());
  std::int64_t next_textfile_ns = 0;
  while (g_state.load(std::memory_order_acquire) == WorkerState::running) {
    const std::uint32_t seen = g_wake.load(std::memory_order_acquire);
    std::int64_t sleep_ns = kIdleSleepNs;
    if (runtime != nullptr) {
      try {
        drain(*runtime);
        const std::int64_t now = monotonic_ns();
        write_clock_calibrator.tick(now);
        g_acks->poll(now);
        g_acks->sweep_closed(now);
        if (now >= next_textfile_ns) {
          write_prometheus_textfile(*runtime);
          next_textfile_ns = now + runtime->policy->log.interval.count();
        }
        const std::int64_t heartbeat_due = g_keep_warm->run_due(now, *runtime->policy);
        sleep_ns = std::clamp(heartbeat_due - now, std::int64_t{1}, kIdleSleepNs);
      } catch (...) {
      }
    }
    if (g_acks != nullptr && g_acks->has_outstanding()) {
      sleep_ns = std::min(sleep_ns, kAckPollNs);
    }
    wait_for_wake(seen, sleep_ns);
  }
  return nullptr;
}

telemetry::Record summary_record(const Runtime& runtime) {
  const Totals& all = g_totals->process();
  telemetry::Record record("summary");
  record.add("connections", all.connections);
  add_counters(record, all.counters);
  record.add_json("write_latency_us", latency_json_us(all.write_latency), latency_text_us(all.write_latency))
      .add_json("ack_latency_us", ack_json(all.acks), latency_text_us(all.acks.histogram))
      .add("dropped_records", g_dropped_total);
  if (const unsigned long untuned = untuned_in_signal_handlers(); untuned != 0) {
    record.add("untuned_in_signal_handlers", static_cast<std::uint64_t>(untuned));
  }
  record.add("write_clock", g_write_clock.uses_tsc() ? "tsc" : "clock_gettime");
  telemetry::JsonArray by_rule;
  std::string text;
  for (std::size_t i = 1; i < g_totals->row_count(); ++i) {
    const Totals& totals = g_totals->row(i);
    if (totals.connections == 0) {
      continue;
    }
    const std::string name(config::rule_name(*runtime.policy, static_cast<int>(i) - 2));
    telemetry::JsonObject entry;
    entry.field("rule", name).field("connections", totals.connections);
    for (const telemetry::CounterField& field : telemetry::kCounterFields) {
      if (field.prometheus_name != nullptr) {
        entry.field(field.record_field, totals.counters.*field.member);
      }
    }
    by_rule.add_raw(entry.raw("write_latency_us", latency_json_us(totals.write_latency)).str());
    text += " " + name + ":connections=" + std::to_string(totals.connections) +
            ",writes=" + std::to_string(totals.counters.writes);
  }
  record.add_json_section("by_rule", by_rule.str(), text);
  return record;
}

}  // namespace

void ensure_telemetry_worker() noexcept {
  WorkerState expected = WorkerState::not_started;
  if (!g_state.compare_exchange_strong(expected, WorkerState::starting, std::memory_order_acq_rel)) {
    // Another thread is starting it: wait (microseconds), so that this thread's connection is
    // measured and kept warm like the others. Setup paths only, never inside a signal handler.
    while (g_state.load(std::memory_order_acquire) == WorkerState::starting) {
      sched_yield();
    }
    return;
  }
  const ErrnoSaver saver;
  const Runtime* runtime = active_runtime();
  try {
    if (g_totals == nullptr && runtime != nullptr) {
      g_totals = new ConnectionTotals(runtime->policy->rules.size());
      g_acks = new AckSampler;
      g_keep_warm = new KeepWarmScheduler;
    }
  } catch (...) {
    g_state.store(WorkerState::stopped, std::memory_order_release);
    return;
  }
  if (runtime != nullptr) {
    const auto& log = runtime->policy->log;
    g_write_reporting.slow_write_ns.store(log.slow_write ? log.slow_write->count() : 0, std::memory_order_relaxed);
    g_write_reporting.trace_writes.store(log.trace_writes, std::memory_order_relaxed);
  }
  // The worker takes none of the app's signals.
  sigset_t all;
  sigset_t previous;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &previous);
  g_state.store(WorkerState::running, std::memory_order_release);
  if (pthread_create(&g_thread, nullptr, worker_main, nullptr) != 0) {
    g_state.store(WorkerState::stopped, std::memory_order_release);
  } else {
    pthread_setname_np(g_thread, "tcptune");
    set_line_deferrer(defer_line);
  }
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);
}

namespace {
void count_unrecorded(const SocketSlot& slot) noexcept {
  g_totals->count_unrecorded(slot.rule_index.load(std::memory_order_relaxed), slot.stats.counters.load());
}
}  // namespace

void post_closed_connection(int fd, const SocketSlot& slot, std::uint32_t generation) noexcept {
  if (g_state.load(std::memory_order_acquire) != WorkerState::running) {
    return;
  }
  ConnectionSnapshot* snapshot = g_pool.acquire();
  if (snapshot == nullptr) {
    g_pool_exhausted.fetch_add(1, std::memory_order_relaxed);
    count_unrecorded(slot);
    return;
  }
  take_snapshot(fd, slot, false, *snapshot);
  snapshot->generation = generation;
  if (!g_ring.try_push({.kind = TelemetryEvent::Kind::closed, .snapshot = snapshot})) {
    g_pool.release(snapshot);
    count_unrecorded(slot);  // the ring counted the drop
    return;
  }
  wake_sleeping_worker();
}

void count_write_after_close(std::int16_t rule_index, ssize_t result, std::size_t offered, int error) noexcept {
  if (g_state.load(std::memory_order_acquire) == WorkerState::running) {
    g_totals->count_write_after_close(rule_index, result, offered, error);
  }
}

WriteReporting& write_reporting() noexcept {
  return g_write_reporting;
}

void post_write(int fd, const SocketSlot& slot, std::int64_t duration_ns, ssize_t result, std::size_t offered,
                bool slow) noexcept {
  if (g_state.load(std::memory_order_acquire) != WorkerState::running) {
    return;
  }
  WriteEvent write{};
  write.fd = fd;
  write.rule_index = slot.rule_index.load(std::memory_order_relaxed);
  write.slow = slow;
  write.duration_ns = duration_ns;
  write.result = result;
  write.offered = offered;
  write.error = result < 0 ? errno : 0;
  if (slow && slot.has_flag(flag_callsite) && !in_signal_handler()) {
    capture_callsite(write.site);  // the app's stack is still below the hook
  }
  g_ring.try_push({.kind = TelemetryEvent::Kind::write, .write = write});  // a full ring counts the drop
}

void maybe_sample_ack(int fd, SocketSlot& slot, std::uint64_t bytes_after, std::int64_t write_end_ns) noexcept {
  if (slot.stats.ack_sample_outstanding.load(std::memory_order_relaxed) ||
      slot.stats.ack_sample_outstanding.exchange(true, std::memory_order_acq_rel)) {
    return;
  }
  const AckSample sample{fd, slot.generation.load(std::memory_order_acquire), bytes_after, write_end_ns, false};
  if (g_state.load(std::memory_order_acquire) != WorkerState::running ||
      !g_ring.try_push({.kind = TelemetryEvent::Kind::ack_sample, .ack = sample}, /*counted=*/false)) {
    slot.stats.ack_sample_outstanding.store(false, std::memory_order_release);
  }
}

bool post_keep_warm(const WarmConnection& connection) noexcept {
  return g_state.load(std::memory_order_acquire) == WorkerState::running &&
         g_ring.try_push({.kind = TelemetryEvent::Kind::keep_warm, .warm = connection}, /*counted=*/false);
}

void post_idle_restart(const IdleRestart& event) noexcept {
  if (g_state.load(std::memory_order_acquire) == WorkerState::running) {
    g_ring.try_push({.kind = TelemetryEvent::Kind::idle_restart, .idle = event});  // a full ring counts the drop
  }
}

void flush_telemetry_at_exit() noexcept {
  WorkerState expected = WorkerState::running;
  if (!g_state.compare_exchange_strong(expected, WorkerState::stopped, std::memory_order_acq_rel)) {
    return;  // nothing was measured, or another thread is already flushing
  }
  const ErrnoSaver saver;
  set_line_deferrer(nullptr);  // from now on lines go straight to the log, after what is queued
  g_wake.fetch_add(1, std::memory_order_release);
  syscall(SYS_futex, &g_wake, FUTEX_WAKE_PRIVATE, 1, nullptr, nullptr, 0);
  pthread_join(g_thread, nullptr);
  mark_log_worker_thread();  // the exiting thread drains the rest itself
  const Runtime* runtime = active_runtime();
  if (runtime == nullptr || g_totals == nullptr) {
    return;
  }
  try {
    drain(*runtime);
    // Before the open connections join the closed totals, which would count them twice.
    write_prometheus_textfile(*runtime);
    // Connections still open at exit are summarized too, marked open_at_exit.
    fd_table().for_each_tcp([&](int fd, const SocketSlot& slot) {
      if (slot.has_flag(flag_measured)) {
        static ConnectionSnapshot snapshot;  // 3 KiB: not on a possibly small exit-time stack
        take_snapshot(fd, slot, true, snapshot);
        handle(snapshot, *runtime);
      }
    });
    if (runtime->policy->log.summary) {
      log_record(LogLevel::info, summary_record(*runtime));
    }
  } catch (...) {
  }
}

void telemetry_after_fork_in_child() noexcept {
  set_line_deferrer(nullptr);  // no worker in the child until its first connection
  g_write_clock.reset();       // until the child's worker calibrates it again
  g_ring.reset_in_child();
  g_pool.reset_in_child();
  g_pool_exhausted.store(0, std::memory_order_relaxed);
  g_dropped_total = 0;
  // The parent's connections are the parent's to summarize: not measured here.
  fd_table().for_each_tcp([](int /*fd*/, SocketSlot& slot) {
    if (slot.has_flag(flag_measured)) {
      slot.clear_flag(flag_measured);
    }
  });
  if (g_totals != nullptr) {
    g_totals->reset();
    // Fresh containers: the parent's worker may have been inside these when it forked.
    try {
      g_acks = new AckSampler;
      g_keep_warm = new KeepWarmScheduler;  // the parent's connections are not kept warm here
    } catch (...) {
      g_state.store(WorkerState::stopped, std::memory_order_release);  // no telemetry in this child
      return;
    }
  }
  g_state.store(WorkerState::not_started, std::memory_order_release);
}

}  // namespace tcptune::shim
