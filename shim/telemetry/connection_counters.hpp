// The counters of one measured connection and of every sum of connections (a rule's totals,
// the process's, a Prometheus row): one list, from which come the plain and the atomic
// struct, their sums, and the names and meanings of the fields the shim writes (conn_close,
// summary, by_rule, the Prometheus textfile) and the CLI reads back. A new counter is one line
// here plus the code that counts it.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstdint>

namespace tcptune::telemetry {

// The macros below take member names, which cannot be parenthesised.
// NOLINTBEGIN(bugprone-macro-parentheses)

// X(member, record field, Prometheus counter or nullptr, help). Every counter is in conn_close
// and summary; those with a Prometheus name are also in each by_rule entry and the textfile.
#define TCPTUNE_CONNECTION_COUNTERS(X)                                                                      \
  X(writes, "writes", "tcptune_writes_total", "Write-family calls on measured TCP connections.")            \
  X(bytes, "bytes", "tcptune_write_bytes_total", "Bytes accepted by those calls.")                          \
  X(partial_writes, "partial_writes", nullptr, "Writes the kernel accepted in part.")                       \
  X(would_block, "eagain", nullptr, "Writes that failed with EAGAIN or EWOULDBLOCK.")                       \
  X(errors, "write_errors", nullptr, "Writes that failed with another error.")                              \
  X(idle_restarts, "idle_restarts", "tcptune_idle_restarts_total",                                          \
    "Writes that found the congestion window restarted after idle.")                                        \
  X(heartbeats, "heartbeats", "tcptune_heartbeats_total", "Keep-warm heartbeats sent on idle connections.") \
  X(heartbeat_bytes, "heartbeat_bytes", nullptr, "Bytes of those heartbeats.")                              \
  X(keep_warm_ended, "keep_warm_ended", nullptr,                                                            \
    "Kept-warm connections whose protocol framing could no longer be followed, so keep-warm ended.")

// Plain counts: snapshots and sums, one thread at a time.
struct ConnectionCounters {
#define TCPTUNE_COUNTER_MEMBER(member, field, prometheus, help) std::uint64_t member = 0;
  TCPTUNE_CONNECTION_COUNTERS(TCPTUNE_COUNTER_MEMBER)
#undef TCPTUNE_COUNTER_MEMBER

  ConnectionCounters& operator+=(const ConnectionCounters& other) noexcept {
#define TCPTUNE_COUNTER_ADD(member, field, prometheus, help) member += other.member;
    TCPTUNE_CONNECTION_COUNTERS(TCPTUNE_COUNTER_ADD)
#undef TCPTUNE_COUNTER_ADD
    return *this;
  }
};

// One counter's description, for writers and readers of records.
struct CounterField {
  std::uint64_t ConnectionCounters::*member;
  const char* record_field;
  const char* prometheus_name;  // nullptr: not in by_rule nor the textfile
  const char* help;
};

#define TCPTUNE_COUNTER_FIELD(member, field, prometheus, help) \
  CounterField{&ConnectionCounters::member, field, prometheus, help},
inline constexpr CounterField kCounterFields[] = {TCPTUNE_CONNECTION_COUNTERS(TCPTUNE_COUNTER_FIELD)};
#undef TCPTUNE_COUNTER_FIELD

// The same counts updated from any thread (relaxed atomics: lock-free, async-signal-safe).
struct AtomicConnectionCounters {
#define TCPTUNE_COUNTER_MEMBER(member, field, prometheus, help) std::atomic<std::uint64_t> member{0};
  TCPTUNE_CONNECTION_COUNTERS(TCPTUNE_COUNTER_MEMBER)
#undef TCPTUNE_COUNTER_MEMBER

  // One write-family call that offered `offered` bytes and returned `result` (errno `error`).
  void count_write(ssize_t result, std::size_t offered, int error) noexcept {
    writes.fetch_add(1, std::memory_order_relaxed);
    if (result >= 0) {
      bytes.fetch_add(static_cast<std::uint64_t>(result), std::memory_order_relaxed);
      if (static_cast<std::size_t>(result) < offered) {
        partial_writes.fetch_add(1, std::memory_order_relaxed);
      }
    } else if (error == EAGAIN || error == EWOULDBLOCK) {
      would_block.fetch_add(1, std::memory_order_relaxed);
    } else {
      errors.fetch_add(1, std::memory_order_relaxed);
    }
  }

  [[nodiscard]] ConnectionCounters load() const noexcept {
    ConnectionCounters out;
#define TCPTUNE_COUNTER_LOAD(member, field, prometheus, help) out.member = member.load(std::memory_order_relaxed);
    TCPTUNE_CONNECTION_COUNTERS(TCPTUNE_COUNTER_LOAD)
#undef TCPTUNE_COUNTER_LOAD
    return out;
  }
  // The counts so far, leaving zeros (for a reader that moves them elsewhere).
  ConnectionCounters take() noexcept {
    ConnectionCounters out;
#define TCPTUNE_COUNTER_TAKE(member, field, prometheus, help) \
  out.member = member.exchange(0, std::memory_order_relaxed);
    TCPTUNE_CONNECTION_COUNTERS(TCPTUNE_COUNTER_TAKE)
#undef TCPTUNE_COUNTER_TAKE
    return out;
  }
  void add(const ConnectionCounters& counts) noexcept {
#define TCPTUNE_COUNTER_ADD(member, field, prometheus, help) member.fetch_add(counts.member, std::memory_order_relaxed);
    TCPTUNE_CONNECTION_COUNTERS(TCPTUNE_COUNTER_ADD)
#undef TCPTUNE_COUNTER_ADD
  }
  void reset() noexcept {
#define TCPTUNE_COUNTER_RESET(member, field, prometheus, help) member.store(0, std::memory_order_relaxed);
    TCPTUNE_CONNECTION_COUNTERS(TCPTUNE_COUNTER_RESET)
#undef TCPTUNE_COUNTER_RESET
  }
};

// NOLINTEND(bugprone-macro-parentheses)

}  // namespace tcptune::telemetry
