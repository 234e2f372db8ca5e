#include "telemetry_worker.hpp"

#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <ctime>
#include <vector>

#include "connection_summary.hpp"
#include "errno_saver.hpp"
#include "event_ring.hpp"
#include "fd_table.hpp"
#include "json_writer.hpp"
#include "process_runtime.hpp"
#include "record.hpp"
#include "shim_log.hpp"
#include "snapshot_pool.hpp"
#include "tcptune/config/rule_matcher.hpp"

namespace tcptune::shim {

namespace {

using config::LogLevel;

// A closed connection's snapshot, or (snapshot null) an idle restart.
struct TelemetryEvent {
  ConnectionSnapshot* snapshot;
  IdleRestart idle;
};

// Bounded memory: 128 snapshots of about 3 KiB wait for the worker, which drains every 100 ms.
telemetry::EventRing<TelemetryEvent, 256> g_ring;
telemetry::SnapshotPool<ConnectionSnapshot, 128> g_pool;
std::atomic<std::uint64_t> g_pool_exhausted{0};

enum class WorkerState : int { not_started, starting, running, stopped };
std::atomic<WorkerState> g_state{WorkerState::not_started};
std::atomic<std::uint32_t> g_wake{0};
pthread_t g_thread;

struct Totals {
  std::uint64_t connections = 0;
  std::uint64_t writes = 0;
  std::uint64_t bytes = 0;
  std::uint64_t partial_writes = 0;
  std::uint64_t would_block = 0;
  std::uint64_t idle_restarts = 0;
  telemetry::LatencyHistogram write_latency;
};
// Index 0: the process; 1: [defaults]; 2 + i: rule i. Touched by the worker only (and by the
// exiting thread once the worker has stopped).
std::vector<Totals>* g_totals = nullptr;
std::uint64_t g_dropped_total = 0;

Totals* rule_totals(std::int16_t rule_index) {
  const auto index = static_cast<std::size_t>(rule_index + 2);
  return index < g_totals->size() ? &(*g_totals)[index] : nullptr;
}

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
  log_record(LogLevel::info, record);
  ++(*g_totals)[0].idle_restarts;
  if (Totals* totals = rule_totals(idle.rule_index)) {
    ++totals->idle_restarts;
  }
}

void add_to(Totals& totals, const ConnectionSnapshot& snapshot) {
  ++totals.connections;
  totals.writes += snapshot.writes;
  totals.bytes += snapshot.bytes;
  totals.partial_writes += snapshot.partial_writes;
  totals.would_block += snapshot.would_block;
  totals.write_latency.merge(snapshot.write_latency);
}

void handle(const ConnectionSnapshot& snapshot, const Runtime& runtime) {
  log_record(LogLevel::info, conn_close_record(snapshot, *runtime.policy));
  add_to((*g_totals)[0], snapshot);
  if (Totals* totals = rule_totals(snapshot.rule_index)) {
    add_to(*totals, snapshot);
  }
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
      if (event.snapshot != nullptr) {
        handle(*event.snapshot, runtime);
      } else {
        handle_idle_restart(event.idle, runtime);
      }
    } catch (...) {
      // Out of memory while formatting: the record is lost, the app is not.
    }
    if (event.snapshot != nullptr) {
      g_pool.release(event.snapshot);
    }
  }
  report_drops();
}

void wait_for_wake(std::uint32_t seen) {
  timespec timeout{0, 100'000'000};
  syscall(SYS_futex, &g_wake, FUTEX_WAIT_PRIVATE, seen, &timeout, nullptr, 0);
}

void* worker_main(void* /*unused*/) {
  const Runtime* runtime = active_runtime();
  while (g_state.load(std::memory_order_acquire) == WorkerState::running) {
    const std::uint32_t seen = g_wake.load(std::memory_order_acquire);
    if (runtime != nullptr) {
      drain(*runtime);
    }
    wait_for_wake(seen);
  }
  return nullptr;
}

telemetry::Record summary_record(const Runtime& runtime) {
  const Totals& all = (*g_totals)[0];
  telemetry::Record record("summary");
  record.add("connections", all.connections)
      .add("writes", all.writes)
      .add("bytes", all.bytes)
      .add("partial_writes", all.partial_writes)
      .add("eagain", all.would_block)
      .add("idle_restarts", all.idle_restarts)
      .add_json("write_latency_us", latency_json_us(all.write_latency), latency_text_us(all.write_latency))
      .add("dropped_records", g_dropped_total);
  telemetry::JsonArray by_rule;
  std::string text;
  for (std::size_t i = 1; i < g_totals->size(); ++i) {
    const Totals& totals = (*g_totals)[i];
    if (totals.connections == 0) {
      continue;
    }
    const std::string name(config::rule_name(*runtime.policy, static_cast<int>(i) - 2));
    by_rule.add_raw(telemetry::JsonObject()
                        .field("rule", name)
                        .field("connections", totals.connections)
                        .field("writes", totals.writes)
                        .field("bytes", totals.bytes)
                        .field("idle_restarts", totals.idle_restarts)
                        .raw("write_latency_us", latency_json_us(totals.write_latency))
                        .str());
    text +=
        " " + name + ":connections=" + std::to_string(totals.connections) + ",writes=" + std::to_string(totals.writes);
  }
  record.add_json_section("by_rule", by_rule.str(), text);
  return record;
}

}  // namespace

void ensure_telemetry_worker() noexcept {
  WorkerState expected = WorkerState::not_started;
  if (!g_state.compare_exchange_strong(expected, WorkerState::starting, std::memory_order_acq_rel)) {
    return;
  }
  const ErrnoSaver saver;
  const Runtime* runtime = active_runtime();
  try {
    if (g_totals == nullptr && runtime != nullptr) {
      g_totals = new std::vector<Totals>(runtime->policy->rules.size() + 2);
    }
  } catch (...) {
    g_state.store(WorkerState::stopped, std::memory_order_release);
    return;
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
  }
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);
}

void post_closed_connection(int fd, const SocketSlot& slot) noexcept {
  if (g_state.load(std::memory_order_acquire) != WorkerState::running) {
    return;
  }
  ConnectionSnapshot* snapshot = g_pool.acquire();
  if (snapshot == nullptr) {
    g_pool_exhausted.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  take_snapshot(fd, slot, false, *snapshot);
  if (!g_ring.try_push({snapshot, {}})) {
    g_pool.release(snapshot);
  }
}

void post_idle_restart(const IdleRestart& event) noexcept {
  if (g_state.load(std::memory_order_acquire) == WorkerState::running) {
    g_ring.try_push({nullptr, event});  // a full ring counts the drop
  }
}

void flush_telemetry_at_exit() noexcept {
  WorkerState expected = WorkerState::running;
  if (!g_state.compare_exchange_strong(expected, WorkerState::stopped, std::memory_order_acq_rel)) {
    return;  // nothing was measured, or another thread is already flushing
  }
  const ErrnoSaver saver;
  g_wake.fetch_add(1, std::memory_order_release);
  syscall(SYS_futex, &g_wake, FUTEX_WAKE_PRIVATE, 1, nullptr, nullptr, 0);
  pthread_join(g_thread, nullptr);
  const Runtime* runtime = active_runtime();
  if (runtime == nullptr || g_totals == nullptr) {
    return;
  }
  try {
    drain(*runtime);
    // Connections still open at exit are summarized too, marked open_at_exit.
    fd_table().for_each_tcp([&](int fd, const SocketSlot& slot) {
      if (slot.has_flag(flag_measured)) {
        static ConnectionSnapshot snapshot;  // 3 KiB: not on a possibly small exit-time stack
        take_snapshot(fd, slot, true, snapshot);
        handle(snapshot, *runtime);
      }
    });
    log_record(LogLevel::info, summary_record(*runtime));
  } catch (...) {
  }
}

void telemetry_after_fork_in_child() noexcept {
  g_ring.reset_in_child();
  g_pool.reset_in_child();
  g_pool_exhausted.store(0, std::memory_order_relaxed);
  g_dropped_total = 0;
  if (g_totals != nullptr) {
    for (Totals& totals : *g_totals) {
      totals = Totals();
    }
  }
  g_state.store(WorkerState::not_started, std::memory_order_release);
}

}  // namespace tcptune::shim
