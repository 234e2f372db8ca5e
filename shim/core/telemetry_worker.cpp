#include "telemetry_worker.hpp"

#include <fcntl.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <memory>
#include <new>
#include <system_error>
#include <utility>
#include <vector>

#include "ack_sampler.hpp"
#include "callsite.hpp"
#include "cancellation_held_off.hpp"
#include "connection_names.hpp"
#include "connection_summary.hpp"
#include "connection_totals.hpp"
#include "drain_pacer.hpp"
#include "errno_saver.hpp"
#include "event_ring.hpp"
#include "fd_table.hpp"
#include "idle_restart.hpp"
#include "json_writer.hpp"
#include "keep_warm_scheduler.hpp"
#include "next_symbols.hpp"
#include "option_misses.hpp"
#include "pending_open.hpp"
#include "process_runtime.hpp"
#include "prometheus_textfile.hpp"
#include "record.hpp"
#include "shim_log.hpp"
#include "signal_context.hpp"
#include "snapshot_pool.hpp"
#include "socket_probe.hpp"
#include "tcptune/config/log_destination.hpp"
#include "tcptune/config/rule_matcher.hpp"
#include "telemetry_records.hpp"
#include "textfile_merge.hpp"
#include "worker_thread.hpp"
#include "write_clock.hpp"

namespace tcptune::shim {

namespace {

using config::LogLevel;

// A log line from an app thread (conn_open, a veto, a warning), already formatted.
struct DeferredLine {
  config::LogLevel level;
  std::string text;
};

// A connect whose conn_open waits (pending_open.hpp), looked at until it is established.
struct PendingConnect {
  int fd = -1;
  std::uint32_t generation = 0;
  std::int64_t next_ns = 0;
  std::int64_t interval_ns = 0;
};
constexpr std::int64_t kFirstConnectLookNs = 1'000'000;
constexpr std::int64_t kLastConnectLookNs = 1'000'000'000;  // a connect that takes long: once a second

// A conn_open to write with the endpoints its socket had: the worker formats it, not the app's
// thread. `completed`: a client's, whose connect ended with `connect_error` (pending_open.hpp).
struct OpenedConnection {
  PendingOpen open;
  config::Endpoint local;
  config::Endpoint peer;
  int connect_error = 0;
  bool completed = false;
};

// A closed connection's snapshot, an idle restart, an ack sample, a write, a line, a
// connection to keep warm, a connect to look at, or a conn_open to write: one of them, as
// `kind` says (a union: each push copies what its kind uses, and no more). A closed
// connection travels in the ring itself, not in memory the worker gives back: the closing
// thread then writes only what the worker reads (event_ring.hpp). The two largest, a closed
// connection and a conn_open, are written in place in their cell.
struct TelemetryEvent {
  enum class Kind : std::uint8_t {
    closed,
    idle_restart,
    ack_sample,
    write,
    line,
    keep_warm,
    connect,
    opened,
    idle_restart_check
  } kind = Kind::line;
  union {
    ConnectionSnapshot closed_connection{};
    IdleRestart idle;
    AckSample ack;
    WriteEvent write;
    DeferredLine* line;
    WarmConnection warm;
    PendingConnect connect;  // for connect and idle_restart_check
    OpenedConnection opened;
  };

  // What the ring copies: up to the end of the member `kind` names.
  [[nodiscard]] std::size_t used_bytes() const noexcept {
    const auto end_of = [this](const auto& member) {
      // A member may be a pointer (a line's): copied as one.
      return static_cast<std::size_t>(reinterpret_cast<const char*>(&member) - reinterpret_cast<const char*>(this)) +
             sizeof member;  // NOLINT(bugprone-sizeof-expression)
    };
    switch (kind) {
      case Kind::closed: return end_of(closed_connection);
      case Kind::idle_restart: return end_of(idle);
      case Kind::ack_sample: return end_of(ack);
      case Kind::write: return end_of(write);
      case Kind::line: return end_of(line);
      case Kind::keep_warm: return end_of(warm);
      case Kind::connect:
      case Kind::idle_restart_check: return end_of(connect);
      case Kind::opened: return end_of(opened);
    }
    return sizeof *this;
  }
};

thread_local bool t_worker_thread = false;

void handle_write(const WriteEvent& write, const Runtime& runtime) {
  log_record(write.slow ? LogLevel::warn : LogLevel::info, write_record(write, *runtime.policy));
}

AckSampler* g_acks = nullptr;
ConnectionTotals* g_totals = nullptr;
KeepWarmScheduler* g_keep_warm = nullptr;
std::vector<PendingConnect>* g_connects = nullptr;  // the worker's only

// Bounded memory: 1024 events of about 350 bytes and 512 write-latency histograms of 1.5 KiB
// (static, touched only as used) wait for the worker, which wakes every 1 to 20 ms, and at
// once when a quarter of the ring or of the histograms wait (kWakeAtEvents, kWakeAtHistograms);
// while events arrive fast, it wakes itself before that (drain_pacer.hpp).
// A closing thread that finds them all taken waits for the worker to free one (wait_for_room)
// rather than drop its record. The ring is small enough (360 KiB) to stay in a core's cache
// between two uses of a cell: at 4096 cells each push wrote lines fetched from memory, which
// cost a close more than the rest of its hand-over (bench/connect_loop).
constexpr std::size_t kEvents = 1024;
using Ring = telemetry::EventRing<TelemetryEvent, kEvents>;
Ring g_ring;
constexpr std::size_t kWakeAtEvents = kEvents / 4;
constexpr std::uint32_t kHistograms = 512;
telemetry::SnapshotPool<telemetry::LatencyHistogram, kHistograms> g_histograms;
std::atomic<std::uint64_t> g_pool_exhausted{0};
// Histograms handed over and not yet handled: past kWakeAtHistograms the worker is woken (one
// futex call per that many closes at a high rate, none at a low one).
std::atomic<std::uint32_t> g_histograms_waiting{0};
// How long the summary at exit or exec waits for room on a stderr pipe that its reader drains:
// the process's exit is held that long at most, and only where the reader keeps up.
constexpr int kSummaryStderrPatienceMs = 200;
constexpr std::uint32_t kWakeAtHistograms = kHistograms / 4;
// A value alone on its cache line: one that app threads read on every connection, apart from
// what the worker writes all the time, each write of which takes the line from them.
template <typename T>
struct alignas(64) AloneOnLine {
  T value;
};
// Events the worker has taken from the ring so far: a waiting producer sees it move. Written
// for every event.
AloneOnLine<std::atomic<std::uint64_t>> g_events_taken_line{0};
std::atomic<std::uint64_t>& g_events_taken = g_events_taken_line.value;

// exec_pending: stopped for an exec of the process (flush_telemetry_before_exec), until it fails.
// writing_before_exit: stopped by a thread's _exit, which writes what is pending, then stopped.
// writing_at_exit: stopped by exit(), whose thread writes the last records and the summary, then
// written_at_exit (flush_telemetry_at_exit).
enum class WorkerState : int {
  not_started,
  starting,
  running,
  stopped,
  exec_pending,
  writing_before_exit,
  writing_at_exit,
  written_at_exit
};
// Read by every hand-over; changed only when the worker starts or stops (its neighbours were
// the count of events taken and the worker's sleep).
AloneOnLine<std::atomic<WorkerState>> g_state_line{WorkerState::not_started};
std::atomic<WorkerState>& g_state = g_state_line.value;
WorkerThread g_thread;

std::uint64_t g_dropped_total = 0;

void handle_idle_restart(const IdleRestart& idle, const Runtime& runtime) {
  // Counted from the connection's own count, at its close.
  log_record(LogLevel::info, idle_restart_record(idle, *runtime.policy));
}

// A closed connection's records: its conn_open if it still waits, and its conn_close.
void write_closed_records(ConnectionSnapshot& snapshot, const telemetry::AckLatency& acks, const Runtime& runtime) {
  if (snapshot.pending_open != nullptr) {
    // Its connect never completed while the hooks looked: named with what the close saw.
    write_pending_open(std::exchange(snapshot.pending_open, nullptr), *runtime.policy, snapshot.local, snapshot.peer);
  }
  if (runtime.policy->log.summary) {
    log_record(LogLevel::info, conn_close_record(snapshot, acks, *runtime.policy));
  }
}

void handle(ConnectionSnapshot& snapshot, const Runtime& runtime) {
  const telemetry::AckLatency acks = g_acks->take(snapshot.fd, snapshot.generation);
  write_closed_records(snapshot, acks, runtime);
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

// Records stderr could not take (shim_log.hpp): said in a "dropped" record once it takes one again.
telemetry::LogDrops g_log_drops_reported;

void report_log_drops() {
  if (!log_on_stderr()) {
    return;
  }
  const telemetry::LogDrops now = log_drops();
  if (now.total() == g_log_drops_reported.total()) {
    return;
  }
  const telemetry::Record record = telemetry::log_drops_record(now, g_log_drops_reported);
  if (log_drop_notice(LogLevel::warn, record)) {
    g_log_drops_reported = now;
  }
}

// A conn_open handed over by post_conn_open, written as the app's thread would have; then, its
// connection established, whether the kernel may restart its window after idle.
void handle_opened(const OpenedConnection& opened, const Runtime& runtime) {
  const PendingOpen& open = opened.open;
  if (opened.completed) {
    write_conn_open(open, *runtime.policy, opened.local, opened.peer, opened.connect_error);
  } else {
    try {
      log_record(LogLevel::info, conn_open_record(open.fd, open.role, *runtime.policy, open.rule, open.phase,
                                                  opened.local, opened.peer, open.site, open.options()));
    } catch (...) {
      // Out of memory while formatting: the record is lost, the app is not.
    }
  }
  release_report(open);
  if (opened.connect_error == 0) {
    note_idle_restart_possible(open.fd, open.generation);
  }
}

// Writes what waits in the ring; returns how many events it took.
std::size_t drain(const Runtime& runtime) {
  TelemetryEvent event{};
  std::size_t taken = 0;
  log_batch_begin();
  refresh_log_file_size_limit();
  while (g_ring.try_pop(event)) {
    ++taken;
    g_events_taken.fetch_add(1, std::memory_order_release);
    try {
      switch (event.kind) {
        case TelemetryEvent::Kind::closed: handle(event.closed_connection, runtime); break;
        case TelemetryEvent::Kind::opened: handle_opened(event.opened, runtime); break;
        case TelemetryEvent::Kind::idle_restart_check:
          note_idle_restart_possible(event.connect.fd, event.connect.generation);
          break;
        case TelemetryEvent::Kind::idle_restart: handle_idle_restart(event.idle, runtime); break;
        case TelemetryEvent::Kind::ack_sample: g_acks->add(event.ack); break;
        case TelemetryEvent::Kind::write: handle_write(event.write, runtime); break;
        case TelemetryEvent::Kind::line: write_deferred_line(event.line->level, event.line->text); break;
        case TelemetryEvent::Kind::keep_warm: g_keep_warm->add(event.warm, monotonic_ns()); break;
        case TelemetryEvent::Kind::connect: g_connects->push_back(event.connect); break;
      }
    } catch (...) {
      // Out of memory while formatting: the record is lost, the app is not.
    }
    if (event.kind == TelemetryEvent::Kind::closed && event.closed_connection.write_latency != nullptr) {
      g_histograms.release(event.closed_connection.write_latency);
      g_histograms_waiting.fetch_sub(1, std::memory_order_acq_rel);
    } else if (event.kind == TelemetryEvent::Kind::line) {
      delete event.line;
    }
  }
  g_totals->absorb_unrecorded();
  report_drops();
  report_log_drops();
  log_batch_end();
  write_waiting_log_lines();
  return taken;
}

// The textfile's reads and writes through libc's next definitions, past the shim's own hooks.
constexpr telemetry::FileCalls kNextFileCalls{
    [](int fd, void* data, std::size_t size) { return next::read(fd, data, size); },
    [](int fd, const void* data, std::size_t size) { return next::write(fd, data, size); },
    [](int fd) { return next::close(fd); }};

// This process's share of the program's textfile; replaced (never freed) in a forked child.
telemetry::MergedTextfile* g_textfile = nullptr;

// How long the exiting thread waits for other processes' merges (each takes about a
// millisecond) before its last counts are given up.
constexpr std::chrono::milliseconds kExitLockWait{1000};
// The worker never waits for the lock: when another process is merging, it tries again after this.
constexpr std::int64_t kTextfileRetryNs = 10'000'000;

std::vector<std::string> keep_warm_rules(const config::Policy& policy) {
  std::vector<std::string> rules;
  for (int rule = -1; rule < static_cast<int>(policy.rules.size()); ++rule) {
    if (config::tuning_for(policy, rule).keep_warm.has_value()) {
      rules.emplace_back(config::rule_name(policy, rule));
    }
  }
  return rules;
}

// The textfile: closed connections' totals plus what open ones have measured so far, so that
// counters move while connections live and never go back when they close, merged into the
// file every process of the program shares. `leaving`: the last write, at exit. Returns false
// when another process held the file's lock for longer than `wait` (nothing was written).
bool write_prometheus_textfile(const Runtime& runtime, bool leaving, std::chrono::milliseconds wait) {
  const std::string& pattern = runtime.policy->log.prometheus_textfile;
  if (pattern.empty()) {
    return true;
  }
  std::vector<telemetry::MetricsRow> rows(g_totals->row_count());
  for (std::size_t i = 1; i < rows.size(); ++i) {
    const Totals& closed = g_totals->row(i);
    telemetry::MetricsRow& row = rows[i];
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
    telemetry::MetricsRow& row = rows[index];
    ++row.connections;
    row.counters += slot.stats.counters.load();
    slot.stats.write_latency_into(row.write_latency);
    g_acks->add_open_to(fd, slot.generation.load(std::memory_order_acquire), row.acks);
  });
  std::erase_if(rows, [](const telemetry::MetricsRow& row) { return row.connections == 0; });
  telemetry::MetricsContext context;
  context.program = runtime.program;
  context.arm = runtime.arm;
  context.source = telemetry::MetricsSource::preloaded_shim;
  context.dropped_records = g_dropped_total;
  context.keep_warm_rules = keep_warm_rules(*runtime.policy);
  context.option_misses = option_misses(*runtime.policy);
  context.log_on_stderr = log_on_stderr();
  context.log_drops = log_drops();
  if (g_textfile == nullptr) {
    g_textfile = new telemetry::MergedTextfile(kNextFileCalls);
  }
  if (const std::string warning = telemetry::per_process_pattern_warning(pattern);
      !warning.empty() && log_first_time("prometheus_textfile_pid")) {
    log_message(LogLevel::warn, warning + " (logged once)");
  }
  const auto result = g_textfile->write(config::expand_log_path(pattern, runtime.program, getpid()),
                                        telemetry::render_prometheus(rows, context), leaving, wait);
  if (!result.started_over.empty() && log_first_time("prometheus_textfile_started_over")) {
    log_message(LogLevel::warn, result.started_over + " (logged once)");
  }
  if (result.outcome == telemetry::MergedTextfile::Outcome::failed && log_first_time("prometheus_textfile")) {
    log_message(LogLevel::warn, result.error + " (logged once)");
  }
  return result.outcome != telemetry::MergedTextfile::Outcome::busy;
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

// The connects whose conn_open waits: each looked at when due, less often the longer it takes.
std::int64_t look_at_connects(std::int64_t now, const config::Policy& policy) {
  std::int64_t next = kDueWhenWoken;
  std::erase_if(*g_connects, [&](PendingConnect& connect) {
    if (connect.next_ns == 0) {
      connect.interval_ns = kFirstConnectLookNs;
      connect.next_ns = now + connect.interval_ns;
    } else if (now >= connect.next_ns) {
      if (poll_pending_open(connect.fd, connect.generation, policy)) {
        return true;
      }
      connect.interval_ns = std::min(connect.interval_ns * 2, kLastConnectLookNs);
      connect.next_ns = now + connect.interval_ns;
    }
    next = std::min(next, connect.next_ns);
    return false;
  });
  return next;
}

// The worker's tasks, in the order they run on each wake-up.
std::vector<WorkerThread::Task> worker_tasks(const Runtime& runtime) {
  auto calibrator = std::make_shared<WriteClockCalibrator>(g_write_clock, tsc_trusted());
  auto next_textfile_ns = std::make_shared<std::int64_t>(0);
  return {
      [&runtime, pacer = std::make_shared<DrainPacer>(kWakeAtEvents)](std::int64_t now) {
        return pacer->next_due(now, drain(runtime));
      },
      [calibrator](std::int64_t now) {
        calibrator->tick(now);
        return kDueWhenWoken;
      },
      [](std::int64_t now) {
        g_acks->poll(now);
        g_acks->sweep_closed(now);
        return g_acks->has_outstanding() ? now + kAckPollNs : kDueWhenWoken;
      },
      [&runtime, next_textfile_ns](std::int64_t now) {
        if (now >= *next_textfile_ns) {
          // Never waits for the lock: another process merging now, so try again shortly.
          const bool written = write_prometheus_textfile(runtime, false, std::chrono::milliseconds(0));
          *next_textfile_ns = now + (written ? runtime.policy->log.interval.count() : kTextfileRetryNs);
        }
        return *next_textfile_ns;
      },
      [&runtime](std::int64_t now) { return g_keep_warm->run_due(now, *runtime.policy); },
      [&runtime](std::int64_t now) { return look_at_connects(now, *runtime.policy); },
  };
}

SummaryContext summary_context() {
  SummaryContext context{g_dropped_total, untuned_in_signal_handlers(), g_write_clock.uses_tsc(), log_on_stderr(),
                         log_drops().total()};
  context.log_lines_without_descriptor = log_lines_without_descriptor();
  return context;
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
      g_connects = new std::vector<PendingConnect>;
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
  g_state.store(WorkerState::running, std::memory_order_release);
  std::vector<WorkerThread::Task> tasks;
  try {
    if (runtime != nullptr) {
      tasks = worker_tasks(*runtime);
    }
  } catch (...) {
  }
  const auto on_start = [] {
    t_worker_thread = true;
    mark_log_worker_thread();
    mark_log_thread_signals_blocked();  // WorkerThread blocks every signal in its thread
  };
  if (!g_thread.start(on_start, std::move(tasks))) {
    g_state.store(WorkerState::stopped, std::memory_order_release);
  } else {
    set_line_deferrer(defer_line);
  }
}

namespace {
void count_unrecorded(const SocketSlot& slot) noexcept {
  g_totals->count_unrecorded(slot.rule_index.load(std::memory_order_relaxed), slot.stats.counters.load());
}
}  // namespace

bool telemetry_running() noexcept {
  return g_state.load(std::memory_order_acquire) == WorkerState::running;
}

bool exit_records_begun() noexcept {
  const WorkerState state = g_state.load(std::memory_order_acquire);
  return state == WorkerState::writing_at_exit || state == WorkerState::written_at_exit;
}

bool exit_writing_records() noexcept {
  return g_state.load(std::memory_order_acquire) == WorkerState::writing_at_exit;
}

void post_pending_open(int fd, std::uint32_t generation) noexcept {
  if (telemetry_running()) {
    // A full ring: not looked at, written by SO_ERROR, the close or the exit instead.
    (void)g_ring.try_push({.kind = TelemetryEvent::Kind::connect, .connect = {fd, generation, 0, 0}},
                          /*counted=*/false);
  }
}

namespace {

// The worker has fallen behind: every snapshot (or every cell of the ring) is taken. A thread
// that may wait (not the worker itself, not a signal handler, which may have interrupted code
// the worker waits for) wakes it and waits until it has taken another event, so that no record
// is lost to a burst of closes: memory stays bounded, and the closes go at the rate the worker
// writes their records. A worker that takes nothing for kMostWaitNs (a log on a hung disk),
// or that stops, lets the record go, counted as before; until it takes another event, no
// thread waits for it again (one second once, not per close). The second is counted in looks
// as well as on the clock: a process stopped as a whole (SIGSTOP, a debugger) has not given its
// worker that time. False: not allowed to wait, or gave up.
constexpr std::int64_t kMostWaitNs = 1'000'000'000;
constexpr long kWaitLookNs = 50'000;
std::atomic<std::uint64_t> g_gave_up_at_taken{~std::uint64_t{0}};
bool wait_for_room() noexcept {
  if (t_worker_thread || in_signal_handler()) {
    return false;
  }
  const std::uint64_t taken = g_events_taken.load(std::memory_order_acquire);
  if (taken == g_gave_up_at_taken.load(std::memory_order_relaxed)) {
    return false;
  }
  const CancellationHeldOff held_off;
  const std::int64_t since = monotonic_ns();
  const timespec pause{0, kWaitLookNs};
  std::int64_t looks = 0;
  while (g_state.load(std::memory_order_acquire) == WorkerState::running) {
    g_thread.wake_if_sleeping();
    (void)nanosleep(&pause, nullptr);
    const std::uint64_t now_taken = g_events_taken.load(std::memory_order_acquire);
    if (now_taken != taken) {
      return true;
    }
    if (++looks * kWaitLookNs > kMostWaitNs && monotonic_ns() - since > kMostWaitNs) {
      g_gave_up_at_taken.store(taken, std::memory_order_relaxed);
      return false;
    }
  }
  return false;
}

// Waits while the worker's state is `state` (another thread writing the last records), at most
// kMostWaitNs (a log that hangs).
void wait_while(WorkerState state) noexcept {
  const CancellationHeldOff held_off;
  const std::int64_t since = monotonic_ns();
  const timespec pause{0, 1'000'000};
  while (g_state.load(std::memory_order_acquire) == state && monotonic_ns() - since < kMostWaitNs) {
    (void)nanosleep(&pause, nullptr);
  }
}

// A close while another thread's exit() writes the last records. That thread summarizes every
// connection still measured as it goes (this one too, open_at_exit, should it get there before
// this close ends) and marks it done: this close waits until it has, and if its connection was
// not among them, writes its conn_close itself. The summary, written by then, does not count it.
void write_close_during_exit(int fd, SocketSlot& slot, std::uint32_t generation) noexcept {
  if (t_worker_thread || in_signal_handler()) {
    return;  // the interrupted code may be the exit's own
  }
  wait_while(WorkerState::writing_at_exit);
  const Runtime* runtime = active_runtime();
  if (g_state.load(std::memory_order_acquire) != WorkerState::written_at_exit || runtime == nullptr ||
      !slot.has_flag(flag_measured)) {
    return;
  }
  const ErrnoSaver saver;
  ConnectionSnapshot snapshot;
  take_snapshot(fd, slot, generation, false, snapshot, nullptr);
  try {
    write_closed_records(snapshot, {}, *runtime);
  } catch (...) {
    // Out of memory while formatting: the record is lost, the app is not.
  }
}

// A close that found the worker stopping for exit() (or stopped by it) while it waited for room,
// or at once: its record goes the exit's way. False: the worker stopped otherwise.
bool exit_took_over(int fd, SocketSlot& slot, std::uint32_t generation) noexcept {
  if (!exit_records_begun()) {
    return false;
  }
  write_close_during_exit(fd, slot, generation);
  return true;
}

void end_hand_over(SocketSlot& slot) noexcept;

// A hand-over to the worker (a close's snapshot, a conn_open) marks its slot for as long as it
// fills its cell. The mark is set before the worker's state is read, and an exit or exec changes
// the state before it looks at the marks (all seq_cst): either the hand-over finds the worker
// stopping and goes that way, or the exit finds the mark and waits (wait_for_hand_overs), so
// that no cell is published after the last drain, to stay in the ring for good.
WorkerState mark_then_read_state(SocketSlot& slot) noexcept {
  slot.flags.fetch_or(flag_handing_over, std::memory_order_seq_cst);
  return g_state.load(std::memory_order_seq_cst);
}
// True, marked, when the worker runs; end it with end_hand_over.
bool begin_hand_over(SocketSlot& slot) noexcept {
  if (mark_then_read_state(slot) == WorkerState::running) {
    return true;
  }
  end_hand_over(slot);
  return false;
}
// Release: an exit that sees the mark gone sees the cell published.
void end_hand_over(SocketSlot& slot) noexcept {
  slot.flags.fetch_and(static_cast<std::uint16_t>(~flag_handing_over), std::memory_order_release);
}

}  // namespace

void post_closed_connection(int fd, SocketSlot& slot, std::uint32_t generation) noexcept {
  if (!begin_hand_over(slot)) {
    if (g_state.load(std::memory_order_acquire) == WorkerState::exec_pending) {
      // Another thread's close while an exec runs: counted for the image that goes on should
      // it fail, as a record lost.
      g_pool_exhausted.fetch_add(1, std::memory_order_relaxed);
      count_unrecorded(slot);
    } else {
      (void)exit_took_over(fd, slot, generation);
    }
    return;
  }
  const ErrnoSaver saver;
  telemetry::LatencyHistogram* write_latency = nullptr;
  if (wrote_anything(slot)) {
    write_latency = g_histograms.acquire();
    while (write_latency == nullptr && wait_for_room()) {
      write_latency = g_histograms.acquire();
    }
    if (write_latency == nullptr) {
      end_hand_over(slot);
      if (!exit_took_over(fd, slot, generation)) {
        g_pool_exhausted.fetch_add(1, std::memory_order_relaxed);
        count_unrecorded(slot);  // a pending conn_open stays in the slot, written at the exit
      }
      return;
    }
  }
  // Its cell first, then the snapshot taken straight into it.
  std::optional<Ring::Claim> cell = g_ring.try_claim(/*counted=*/false);
  while (!cell.has_value() && wait_for_room()) {
    cell = g_ring.try_claim(/*counted=*/false);
  }
  if (!cell.has_value()) {
    if (write_latency != nullptr) {
      g_histograms.release(write_latency);
    }
    end_hand_over(slot);
    if (!exit_took_over(fd, slot, generation)) {
      g_ring.count_dropped();
      count_unrecorded(slot);  // a pending conn_open stays in the slot, written at the exit
    }
    return;
  }
  TelemetryEvent& closed = *cell->event;
  closed.kind = TelemetryEvent::Kind::closed;
  take_snapshot(fd, slot, generation, false, *new (&closed.closed_connection) ConnectionSnapshot, write_latency);
  g_ring.publish(*cell);
  slot.clear_flag(flag_measured);  // handed over: an exit's walk must not summarize it again
  end_hand_over(slot);
  const bool histograms_crowded =
      write_latency != nullptr && g_histograms_waiting.fetch_add(1, std::memory_order_acq_rel) + 1 >= kWakeAtHistograms;
  if (histograms_crowded || g_ring.backlog_at_least(kWakeAtEvents)) {
    g_thread.wake_if_sleeping();
  }
}

bool post_idle_restart_check(int fd, std::uint32_t generation) noexcept {
  return g_state.load(std::memory_order_acquire) == WorkerState::running &&
         g_ring.try_push({.kind = TelemetryEvent::Kind::idle_restart_check, .connect = {fd, generation, 0, 0}},
                         /*counted=*/false);
}

namespace {

// A conn_open's cell, filled in place (it is the second largest event). A full ring is waited
// on as a close waits: written at once instead, it would go ahead of the records that wait
// there (a reused address pair's previous conn_close among them).
bool post_opened(const PendingOpen& open, const config::Endpoint& local, const config::Endpoint& peer,
                 int connect_error, bool completed) noexcept {
  SocketSlot* slot = fd_table().find(open.fd);
  // A completed connect's slot is marked already (mark_completing_open), for longer.
  if (slot == nullptr ||
      (completed ? g_state.load(std::memory_order_seq_cst) != WorkerState::running : !begin_hand_over(*slot))) {
    return false;
  }
  const ErrnoSaver saver;  // a wait's nanosleep
  std::optional<Ring::Claim> cell = g_ring.try_claim(/*counted=*/false);
  while (!cell.has_value() && wait_for_room()) {
    cell = g_ring.try_claim(/*counted=*/false);
  }
  if (cell.has_value()) {
    cell->event->kind = TelemetryEvent::Kind::opened;
    new (&cell->event->opened) OpenedConnection{open, local, peer, connect_error, completed};
    g_ring.publish(*cell);
  }
  if (!completed) {
    end_hand_over(*slot);
  }
  return cell.has_value();
}

}  // namespace

bool post_conn_open(const PendingOpen& open, const config::Endpoint& local, const config::Endpoint& peer) noexcept {
  return post_opened(open, local, peer, 0, false);
}

bool mark_completing_open(SocketSlot& slot) noexcept {
  if (mark_then_read_state(slot) != WorkerState::writing_at_exit) {
    return true;
  }
  end_hand_over(slot);
  return false;
}

void unmark_completing_open(SocketSlot& slot) noexcept {
  end_hand_over(slot);
}

bool post_completed_connect(const PendingOpen& open, const config::Endpoint& local, const config::Endpoint& peer,
                            int connect_error) noexcept {
  return post_opened(open, local, peer, connect_error, /*completed=*/true);
}

void count_write_after_close(std::int16_t rule_index, ssize_t result, std::size_t offered, int error) noexcept {
  if (g_state.load(std::memory_order_acquire) == WorkerState::running) {
    g_totals->count_write_after_close(rule_index, result, offered, error);
  }
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
  // The worker first: without it nothing would time the sample, so nothing is claimed.
  if (g_state.load(std::memory_order_relaxed) != WorkerState::running ||
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

namespace {

// The generation of a measured slot's connection as the exit summarizes it. A close under way on
// another thread (waiting for the exit's records) has moved it on by one already
// (end_connection): the connection it closes is the one before, whose ends are kept under that
// generation (a new connection on the descriptor would be two on, past the close's retire).
std::uint32_t generation_at_exit(const SocketSlot& slot) noexcept {
  const std::uint32_t generation = slot.generation.load(std::memory_order_acquire);
  const ConnectionNames* names = names_if_any(slot);
  config::Endpoint local;
  config::Endpoint peer;
  if (names != nullptr && !names->load(generation, local, peer) && names->load(generation - 1, local, peer)) {
    return generation - 1;
  }
  return generation;
}

// Hand-overs that found the worker running just before an exit or exec stopped it
// (begin_hand_over): their cells are published before the last drain. Each ends within a look
// of a wait for room at most, unless its thread is not running; kMostHandOverWaitNs bounds them
// all, for a mark that nothing will clear (a signal handler that left a close by longjmp). Such
// marks are said in a warning. Not from a signal handler, which may have interrupted a
// hand-over of its own thread.
constexpr std::int64_t kMostHandOverWaitNs = 100'000'000;
void wait_for_hand_overs() noexcept {
  if (in_signal_handler()) {
    return;
  }
  const CancellationHeldOff held_off;
  const std::int64_t since = monotonic_ns();
  const timespec pause{0, kWaitLookNs};
  int unfinished = 0;
  fd_table().for_each_tcp([&](int, const SocketSlot& slot) {
    while ((slot.flags.load(std::memory_order_seq_cst) & flag_handing_over) != 0) {
      if (monotonic_ns() - since >= kMostHandOverWaitNs) {
        ++unfinished;
        return;
      }
      (void)nanosleep(&pause, nullptr);
    }
  });
  if (unfinished != 0) {
    try {
      log_message(LogLevel::warn, std::to_string(unfinished) +
                                      " hand-over(s) of a record to the telemetry worker did not finish before the "
                                      "process's records ended; their records may be lost");
    } catch (...) {
    }
  }
}

// conn_opens no snapshot took: at _exit, which summarizes no connection, connects still under
// way, whose descriptors name their local end; or ones whose close record was lost (counted),
// whose descriptor may name another socket since (its generation moved on at the close).
void write_pending_opens(const Runtime& runtime) {
  fd_table().for_each_slot([&](int fd, SocketSlot& slot) {
    if (ConnectionNames* names = names_if_any(slot)) {
      if (PendingOpen* open = names->pending.exchange(nullptr, std::memory_order_acq_rel)) {
        const bool still_open = slot.generation.load(std::memory_order_acquire) == open->generation;
        write_pending_open(open, *runtime.policy, still_open ? local_endpoint(fd) : config::Endpoint{}, {});
      }
    }
  });
}

}  // namespace

void flush_telemetry_at_exit() noexcept {
  if (in_any_child_sharing_memory()) {
    return;  // _Fork, clone or a raw fork: the state is the parent's, and its worker not this process's
  }
  WorkerState expected = WorkerState::running;
  if (!g_state.compare_exchange_strong(expected, WorkerState::writing_at_exit, std::memory_order_seq_cst)) {
    return;  // nothing was measured, or another thread is already flushing
  }
  const ErrnoSaver saver;
  // Other threads' closes wait for this (post_closed_connection), at most kMostWaitNs. The exit
  // does not wait for them in turn: they would open more connections meanwhile.
  struct Written {
    ~Written() { g_state.store(WorkerState::written_at_exit, std::memory_order_release); }
  } const written;
  set_line_deferrer(nullptr);  // from now on lines go straight to the log, after what is queued
  g_thread.stop();
  wait_for_hand_overs();
  mark_log_worker_thread();  // the exiting thread drains the rest itself
  const Runtime* runtime = active_runtime();
  if (runtime == nullptr || g_totals == nullptr) {
    return;
  }
  try {
    drain(*runtime);
    // Before the open connections join the closed totals, which would count them twice.
    write_prometheus_textfile(*runtime, true, kExitLockWait);
    // Connections still open at exit are summarized too, marked open_at_exit, and marked done:
    // a close on another thread waiting meanwhile then writes nothing more.
    fd_table().for_each_tcp([&](int fd, SocketSlot& slot) {
      if (slot.has_flag(flag_measured)) {
        static ConnectionSnapshot snapshot;  // not on a possibly small exit-time stack
        static telemetry::LatencyHistogram write_latency;
        take_snapshot(fd, slot, generation_at_exit(slot), true, snapshot, &write_latency);
        handle(snapshot, *runtime);
        slot.clear_flag(flag_measured);
      }
    });
    write_pending_opens(*runtime);
    if (runtime->policy->log.summary) {
      const PatientStderrWrites patient(kSummaryStderrPatienceMs);
      log_record(LogLevel::info, summary_record(*g_totals, *runtime->policy, summary_context()));
    }
  } catch (...) {
  }
}

void flush_telemetry_before_quick_exit() noexcept {
  if (in_signal_handler() || in_any_child_sharing_memory()) {
    return;  // the interrupted code may hold the log's lock or malloc's; a vfork child's records are its parent's
  }
  WorkerState expected = WorkerState::running;
  if (!g_state.compare_exchange_strong(expected, WorkerState::writing_before_exit, std::memory_order_seq_cst)) {
    if (expected == WorkerState::writing_before_exit || expected == WorkerState::writing_at_exit) {
      // Another thread's _exit or exit() is writing what was pending: this thread's _exit would
      // end the process under it, and the records with it.
      wait_while(expected);
    }
    return;  // nothing measured, or another thread is flushing
  }
  const ErrnoSaver saver;
  set_line_deferrer(nullptr);
  g_thread.stop();
  wait_for_hand_overs();
  mark_log_worker_thread();  // the exiting thread writes the rest itself
  const Runtime* runtime = active_runtime();
  if (runtime != nullptr && g_totals != nullptr) {
    try {
      drain(*runtime);
      write_pending_opens(*runtime);
    } catch (...) {
    }
  }
  g_state.store(WorkerState::stopped, std::memory_order_release);
}

namespace {

// Every measured connection, summarized as the exec leaves it.
void summarize_open_connections_at_exec(const Runtime& runtime) {
  fd_table().for_each_tcp([&](int fd, SocketSlot& slot) {
    if (slot.has_flag(flag_measured)) {
      static ConnectionSnapshot snapshot;  // not on the app's stack
      static telemetry::LatencyHistogram write_latency;
      // -1 (closed meanwhile) has FD_CLOEXEC's bit set: not inherited.
      const bool inherited = (next::fcntl(fd, F_GETFD, 0) & FD_CLOEXEC) == 0;
      take_snapshot(fd, slot, slot.generation.load(std::memory_order_acquire), inherited, snapshot, &write_latency);
      snapshot.at_exec = inherited ? AtExec::inherited : AtExec::closed;
      handle(snapshot, runtime);
    }
  });
  write_pending_opens(runtime);
}

// The image's accounting ends with its summary: what follows (another thread's writes while the
// exec runs, and all of it should the exec fail) counts from zero, as in a new process.
void start_counting_again() {
  g_totals->reset();
  g_dropped_total = 0;
  option_misses_after_fork_in_child();
  fd_table().for_each_tcp([](int /*fd*/, SocketSlot& slot) {
    if (slot.has_flag(flag_measured)) {
      slot.stats.reset(monotonic_ns());  // its outstanding ack sample too, dropped with the sampler
    }
  });
  delete std::exchange(g_acks, new AckSampler);
  delete std::exchange(g_textfile, nullptr);  // its share left the file with the last write
}

}  // namespace

bool flush_telemetry_before_exec() noexcept {
  WorkerState expected = WorkerState::running;
  if (!g_state.compare_exchange_strong(expected, WorkerState::exec_pending, std::memory_order_seq_cst)) {
    return false;  // nothing measured, or the process is exiting
  }
  const ErrnoSaver saver;
  set_line_deferrer(nullptr);  // from now on lines go straight to the log, after what is queued
  g_thread.stop();
  wait_for_hand_overs();
  const Runtime* runtime = active_runtime();
  if (runtime == nullptr || g_totals == nullptr) {
    return true;
  }
  try {
    drain(*runtime);
    // The image leaves the textfile as at exit; before its open connections join the totals.
    write_prometheus_textfile(*runtime, true, kExitLockWait);
    summarize_open_connections_at_exec(*runtime);
    if (runtime->policy->log.summary) {
      SummaryContext context = summary_context();
      context.at_exec = true;
      const PatientStderrWrites patient(kSummaryStderrPatienceMs);
      log_record(LogLevel::info, summary_record(*g_totals, *runtime->policy, context));
    }
    start_counting_again();
  } catch (...) {
    // Out of memory: what was not written is lost, as it was before the exec flushed anything.
  }
  return true;
}

void telemetry_after_failed_exec(int error) noexcept {
  if (g_state.load(std::memory_order_acquire) != WorkerState::exec_pending) {
    return;
  }
  const ErrnoSaver saver;
  if (const Runtime* runtime = active_runtime(); runtime != nullptr) {
    try {
      telemetry::Record start("start");
      if (!log_is_jsonl()) {
        start.add("program", runtime->program);
      }
      start.add("policy", runtime->policy->source)
          .add("rules", static_cast<std::int64_t>(runtime->policy->rules.size()))
          .add("exec_failed", std::generic_category().message(error));
      log_record(LogLevel::info, start);
    } catch (...) {
    }
  }
  g_state.store(WorkerState::not_started, std::memory_order_release);
  ensure_telemetry_worker();
}

void telemetry_after_fork_in_child() noexcept {
  set_line_deferrer(nullptr);  // no worker in the child until its first connection
  g_thread.forget_in_child();
  g_write_clock.reset();  // until the child's worker calibrates it again
  g_ring.reset_in_child();
  g_histograms.reset_in_child();
  g_histograms_waiting.store(0, std::memory_order_relaxed);
  g_pool_exhausted.store(0, std::memory_order_relaxed);
  g_dropped_total = 0;
  forget_untuned_in_child();
  g_log_drops_reported = log_drops();  // the parent's drops are the parent's to report
  option_misses_after_fork_in_child();
  if (g_textfile != nullptr) {
    // Forked while the parent's worker merged: the child shares that lock through its copy of
    // the descriptor, and would hold it for as long as it lives.
    if (const int lock = g_textfile->lock_held(); lock >= 0) {
      next::close(lock);
    }
    g_textfile = nullptr;  // the parent's (possibly half-updated) state stays unused; the child starts from zero
  }
  // The parent's connections are the parent's to summarize (and their conn_opens to write):
  // not measured here. Nor is a hand-over under way: one the fork caught half done, on a thread
  // the child does not have, would hold up the child's exit (wait_for_hand_overs).
  fd_table().for_each_tcp([](int /*fd*/, SocketSlot& slot) {
    constexpr auto kParents = static_cast<std::uint16_t>(flag_measured | flag_handing_over);
    if ((slot.flags.load(std::memory_order_relaxed) & kParents) != 0) {
      slot.flags.fetch_and(static_cast<std::uint16_t>(~kParents), std::memory_order_relaxed);
    }
  });
  fd_table().for_each_slot([](int /*fd*/, SocketSlot& slot) {
    if (ConnectionNames* names = names_if_any(slot)) {
      names->pending.store(nullptr, std::memory_order_relaxed);  // the parent's copy; left unfreed
    }
  });
  if (g_totals != nullptr) {
    g_totals->reset();
    // Fresh containers: the parent's worker may have been inside these when it forked.
    try {
      g_acks = new AckSampler;
      g_keep_warm = new KeepWarmScheduler;  // the parent's connections are not kept warm here
      g_connects = new std::vector<PendingConnect>;
    } catch (...) {
      g_state.store(WorkerState::stopped, std::memory_order_release);  // no telemetry in this child
      return;
    }
  }
  g_state.store(WorkerState::not_started, std::memory_order_release);
}

}  // namespace tcptune::shim
