// The telemetry worker: one thread per process, started on the first measured connection,
// that turns closed connections' snapshots into conn_close records and keeps the totals for
// the process summary written at exit. The app's threads only hand it snapshots through a
// lock-free ring (dropped and counted when full, never blocking).
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "socket_slot.hpp"
#include "tcptune/config/cidr.hpp"

namespace tcptune::shim {

struct PendingOpen;

// Idempotent and thread-safe; called when a connection starts being measured or kept warm.
void ensure_telemetry_worker() noexcept;
// The worker runs: it will write what is handed to it (a pending conn_open among them).
bool telemetry_running() noexcept;
// exit() has begun writing the process's last records: a connection set up from now on gets
// none (they would come after the summary, if the process's end left time for them at all).
bool exit_records_begun() noexcept;
// exit() is writing them now (exit_records_begun, and not done yet).
bool exit_writing_records() noexcept;
// A client's conn_open waits for its connect (pending_open.hpp), still under way when connect()
// returned: the worker looks at the connection until it is established, from 1 ms after, then
// less and less often. Lock-free.
void post_pending_open(int fd, std::uint32_t generation) noexcept;
// A measured connection is closing: its snapshot goes to the worker, under the generation it
// had while open, with its pending conn_open if any. Async-signal-safe. When the worker has
// fallen behind (every snapshot taken), a thread outside a signal handler waits until it takes
// another event (at most 1 s without one) rather than lose the record.
void post_closed_connection(int fd, SocketSlot& slot, std::uint32_t generation) noexcept;
// A measured connection's congestion control is looked at by the worker: unless it is BBR,
// the slot gets flag_idle_restart_possible (while it still holds connection `generation`).
// False when the worker is not running or its ring is full: the caller looks itself. Lock-free.
bool post_idle_restart_check(int fd, std::uint32_t generation) noexcept;
// A conn_open (an accepted or adopted socket's, with the endpoints it has) for the worker to
// format and write: a copy, which owns what `open` owned when this returns true; false when the
// worker is not running or its ring is full: the caller writes it. Lock-free.
bool post_conn_open(const PendingOpen& open, const config::Endpoint& local, const config::Endpoint& peer) noexcept;
// A client's conn_open whose connect ended (`connect_error`, 0 when established), with the
// endpoints it ended with: the worker writes it as write_pending_open would, from a copy that
// owns what `open` owned. False as above. The caller holds the slot's mark
// (mark_completing_open).
bool post_completed_connect(const PendingOpen& open, const config::Endpoint& local, const config::Endpoint& peer,
                            int connect_error) noexcept;
// Marks the slot while the caller completes its client's parked conn_open (takes it, then hands
// it over, writes it or parks it again), so that an exit() that begins meanwhile waits for that
// before it summarizes the connections, which takes a parked conn_open with them. False, with no
// mark, when an exit is writing the last records already: the conn_open is then left parked,
// for the exit to write with its connection. Else unmark_completing_open when done.
bool mark_completing_open(SocketSlot& slot) noexcept;
void unmark_completing_open(SocketSlot& slot) noexcept;
// A measured write that returned after another thread closed its descriptor: counted in its
// rule's totals, since its connection's record is already taken. Lock-free; async-signal-safe.
void count_write_after_close(std::int16_t rule_index, ssize_t result, std::size_t offered, int error) noexcept;
// A write found the congestion window restarted after idle (idle_restart.hpp).
struct IdleRestart;
void post_idle_restart(const IdleRestart& event) noexcept;
// After a measured write that left the connection's byte count at `bytes_after`: unless a
// sample is already outstanding (the write path looks first), or the worker is not running,
// the worker times until the peer acknowledges that byte. Lock-free, no system call;
// async-signal-safe.
void maybe_sample_ack(int fd, SocketSlot& slot, std::uint64_t bytes_after, std::int64_t write_end_ns) noexcept;
// What the write path reports beyond its statistics, set from [log] when the worker starts.
struct WriteReporting {
  std::atomic<std::int64_t> slow_write_ns{0};  // 0: no slow_write records
  std::atomic<bool> trace_writes{false};
};
// Read by every measured write: a global of its own, not behind a call.
inline constinit WriteReporting g_write_reporting;
// A write for a slow_write or (trace_writes) write record. Lock-free; async-signal-safe.
void post_write(int fd, const SocketSlot& slot, std::int64_t duration_ns, ssize_t result, std::size_t offered,
                bool slow) noexcept;

// A connection to keep warm (keep_warm.hpp); false when the worker is not running or its ring
// is full. Lock-free.
struct WarmConnection;
bool post_keep_warm(const WarmConnection& connection) noexcept;

// Process exit: stop the worker, summarize connections still open, write the summary. Not in a
// child whose state is its parent's (_Fork, clone, a raw fork or vfork): it has no worker to stop.
void flush_telemetry_at_exit() noexcept;
// _exit (no exit handlers): the calling thread writes what the worker was handed (conn_opens,
// the records of connections closed) and the conn_opens still waiting for their connects; not
// the summary, nor a conn_close for a connection still open. Not from a signal handler, nor in
// a child that shares its parent's memory (a vfork child's _exit after a failed exec). Another
// thread's _exit meanwhile waits for that writing (at most a second), which it would cut short.
void flush_telemetry_before_quick_exit() noexcept;
// An exec is about to replace this process image (exec_flush.hpp): the worker stops, the
// calling thread writes what it had not, then a conn_close for each measured connection (marked
// `at_exec`: closed by the exec, or inherited by the program exec'd) and the summary. The
// image's counts then start again from zero, for what follows should the exec fail. True when
// it did so (the worker was running); not from a signal handler.
bool flush_telemetry_before_exec() noexcept;
// That exec failed with `error`: this image goes on as a new lifetime of the process, said by a
// start record naming the failure, and the worker starts again. Preserves errno.
void telemetry_after_failed_exec(int error) noexcept;
// Fork child: no worker yet (it restarts on the next measured connection), nothing inherited.
void telemetry_after_fork_in_child() noexcept;

}  // namespace tcptune::shim
