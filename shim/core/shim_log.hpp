// The shim's log file. spdlog lives behind this interface only (it is slow to compile and
// must stay out of widely included headers). Nothing here is called on the write path.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "prometheus_textfile.hpp"
#include "record.hpp"
#include "tcptune/config/policy.hpp"

namespace tcptune::shim {

// Opens (appending) the log at `path`; an empty path disables logging; "stderr"
// (config::is_stderr_log) is the process's own standard error (stderr_stream.hpp). Returns an
// error message on failure, empty on success. In jsonl format every line is one JSON object:
// {"ts","level","pid","program", then "arm" when `arm` is not empty (TCPTUNE_ARM), then the
// record's fields}.
std::string open_log(const std::string& path, config::LogLevel level, config::LogFormat format,
                     std::string_view program, std::string_view arm = {});
// A write that fails or comes out short (a full disk, `ulimit -f`: SIGXFSZ is held off around
// the log's writes, never ignored for the app) ends the log: the failed line's part is cut off
// again, one line on stderr names the log and the error, and nothing more is written; the
// program runs on, still measured (for the Prometheus textfile). `tcptune run` hears of it at
// the abstract socket `name` (TCPTUNE_LOG_CUT_NOTICE; empty: nobody listens).
void set_log_cut_notice(std::string_view name) noexcept;
// [log] rotate_size and keep: past rotate_size bytes the file becomes FILE.1 (FILE.1 becomes
// FILE.2, ... up to FILE.keep) and a new FILE starts. 0 turns rotation off.
void set_log_rotation(std::uint64_t rotate_size, int keep);
// A forked child whose log path has {pid}: later lines go to `path` instead; the parent's
// file is closed in the child. No-op when there is no log.
std::string switch_log_file(const std::string& path);
bool log_enabled(config::LogLevel level) noexcept;
bool log_is_jsonl() noexcept;
// A free-form message: the line itself in text format, {"event":"log"|"warning","message"}
// in jsonl.
void log_message(config::LogLevel level, std::string_view message) noexcept;
// The telemetry worker takes the app threads' lines while it runs: the deferrer returns false
// when it cannot (the line is then written at once). The worker writes them back with
// write_deferred_line() from the thread it marked.
using LineDeferrer = bool (*)(config::LogLevel level, std::string&& line);
void set_line_deferrer(LineDeferrer deferrer) noexcept;
void mark_log_worker_thread() noexcept;
void write_deferred_line(config::LogLevel level, std::string_view line) noexcept;
// A structured record (conn_open, conn_close, summary, ...), in the log's format. On stderr a
// JSON record longer than one write of PIPE_BUF bytes leaves its longest fields out, named in
// "omitted" (Record::json_fields_within).
void log_record(config::LogLevel level, const telemetry::Record& record) noexcept;
// The process's start record: on stderr (below warn) it waits for the first other record, so a
// process with nothing to report writes nothing into the app's stderr.
void log_start_record(config::LogLevel level, const telemetry::Record& record) noexcept;
// A "dropped" record about records stderr could not take: true when it was written (its own
// failure is not counted as a drop).
bool log_drop_notice(config::LogLevel level, const telemetry::Record& record) noexcept;
bool log_on_stderr() noexcept;
// While one lives, this thread's records on a stderr pipe found full wait up to `patience_ms` for
// room instead of being dropped, if the pipe's reader was seen draining it after an earlier drop
// (a reader briefly behind); a pipe nobody drains is not waited for. For the summary a process
// writes as it exits or execs: a tail of its log that the app's own lines crowd out.
class PatientStderrWrites {
 public:
  explicit PatientStderrWrites(int patience_ms) noexcept;
  ~PatientStderrWrites();
  PatientStderrWrites(const PatientStderrWrites&) = delete;
  PatientStderrWrites& operator=(const PatientStderrWrites&) = delete;
};
// Records the log on stderr could not take so far (a full pipe, a record too long).
telemetry::LogDrops log_drops() noexcept;
// A log file that holds no descriptor (RLIMIT_NOFILE leaves none out of the app's range): each
// write opens the file. Lines that found no number free wait for one (up to 64 KiB), written
// before the next line or by this call (the worker's, at each wake-up, and at exit); those past
// that are lost, and counted here.
void write_waiting_log_lines() noexcept;
std::uint64_t log_lines_without_descriptor() noexcept;
// One line on the process's stderr, never blocking, never into a network socket.
void say_on_stderr(const std::string& text) noexcept;
// The app closed fd 2 or is putting another file on it: the log on stderr ends there, its
// descriptors closed (a pipe's reader sees the end). Not in a vfork child.
void app_releases_stderr() noexcept;
// A forked child's log on stderr holds none of its parent's descriptors until it writes
// (stderr_stream.hpp: a daemon that detaches must not keep its caller's pipe open).
void detach_stderr_in_child() noexcept;

// True the first time `key` is seen in this process, for "logged once" messages. The set is
// guarded by the log's mutex, which the fork handlers hold, so a child never inherits it locked.
bool log_first_time(const std::string& key);

// The log's own descriptors (one for a file, up to three on stderr) are not the app's to close:
// close() of one is a no-op, and before the app dup2()s over one, it moves to another number.
bool is_log_fd(int fd) noexcept;
inline constexpr int kMaxLogFds = 3;
int log_fds(int (&fds)[kMaxLogFds]) noexcept;  // how many, in ascending order
void move_log_fd_away_from(int fd) noexcept;

// The telemetry worker gathers the lines of one wake-up and writes them in one write(2) (at
// most 64 KiB at a time, and where rotate_size falls): between these two calls on its thread,
// lines wait for log_batch_end(), or for the next line of another thread, which writes them
// first. Lines stay whole and in order; the file is complete up to its last line.
void log_batch_begin() noexcept;
void log_batch_end() noexcept;
// The calling thread blocks every signal (the worker): its writes cannot raise SIGXFSZ, so
// nothing is held around them.
void mark_log_thread_signals_blocked() noexcept;
// Reads RLIMIT_FSIZE again: while it is unlimited no log write can raise SIGXFSZ, and the
// app's threads write without holding it off (three system calls fewer). At the log's
// opening, and at each of the worker's wake-ups, so a limit the app sets later is seen within
// one (at most 20 ms).
void refresh_log_file_size_limit() noexcept;
// A forked child: its own pid on its lines, and none of the lines its parent had gathered.
void log_after_fork_in_child() noexcept;

// Fork safety: no thread may be inside the logger while the process forks.
void log_prepare_fork() noexcept;
void log_after_fork() noexcept;

}  // namespace tcptune::shim
