#include "shim_log.hpp"

#include <fcntl.h>
#include <signal.h>
#include <spdlog/details/fmt_helper.h>
#include <spdlog/details/log_msg.h>
#include <spdlog/pattern_formatter.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <memory>
#include <mutex>
#include <set>
#include <system_error>

#include "errno_saver.hpp"
#include "held_signals.hpp"
#include "monotonic_clock.hpp"
#include "next_symbols.hpp"
#include "private_descriptor.hpp"
#include "signal_context.hpp"
#include "stderr_stream.hpp"
#include "tcptune/config/escape.hpp"
#include "tcptune/config/file_type.hpp"
#include "tcptune/config/log_cut_notice.hpp"
#include "tcptune/config/log_destination.hpp"

namespace tcptune::shim {

namespace {

// The lines' envelope (time, level, pid, program around a record), spdlog's pattern
// formatter: one used under the log's mutex, and spares that a thread takes without it (when
// one is free), so that formatting on one thread does not hold up another's write. Set once
// the log is open; never destroyed: hooks may log from other libraries' exit handlers after
// our statics would have been torn down.
struct LineFormatters {
  std::unique_ptr<spdlog::formatter> locked;  // under the log's mutex
  struct Spare {
    std::atomic<bool> busy{false};
    std::unique_ptr<spdlog::formatter> formatter;
  };
  std::array<Spare, 4> spares;
};
std::atomic<LineFormatters*> g_formatters{nullptr};
std::atomic<int> g_level{static_cast<int>(config::LogLevel::off)};
std::mutex& log_mutex() {
  static auto* mutex = new std::mutex;
  return *mutex;
}
// The pid on every line: this process's, set when the log opens and again in a forked child
// (log_after_fork_in_child), instead of a getpid() per line.
std::atomic<int> g_log_pid{0};
// Lines formatted and not written yet (under the log's mutex): the telemetry worker gathers
// the lines of one wake-up (log_batch_begin/end) and writes them in one write(2), at most
// kBatchBytes at a time; any other thread's line goes out at once, with what is gathered
// before it, so the file keeps the order in which lines were logged.
std::string* g_pending_lines = nullptr;  // never freed, like the formatters
constexpr std::size_t kBatchBytes = std::size_t{64} * 1024;
thread_local bool t_batching = false;
// A thread with every signal blocked (the worker) cannot be sent one by its own write; other
// threads hold SIGXFSZ off around the log's writes only while RLIMIT_FSIZE is finite, as the
// worker found it at its last wake-up (a write past that limit is what raises it).
thread_local bool t_signals_blocked = false;
std::atomic<bool> g_file_size_unlimited{false};
// The log file descriptor, kept at a high number, close-on-exec, and away from the app: the
// close hooks never let the app close it or dup2 over it (see protect_log_fd_from).
constexpr int kLogFdFloor = 900;
std::atomic<int> g_log_fd{-1};
// Where RLIMIT_NOFILE leaves no number out of the app's range (private_descriptor.hpp: a hard
// limit as low as the soft one, under 900), the log holds no descriptor between lines: each line
// opens the file, is written and closes it (open_transient_log), so that the app is handed every
// number it would be without the shim, but in the microseconds of a write. A line that finds no
// number free waits for one (write_waiting_lines); past kMostWaiting bytes it is lost, and counted.
std::atomic<bool> g_log_transient{false};
std::atomic<std::uint64_t> g_lines_without_descriptor{0};
std::string* g_waiting_lines = nullptr;  // under the log's mutex; never freed, like the formatters
constexpr std::size_t kMostWaiting = std::size_t{64} * 1024;
// open_log_fd's answer when it opened the file but keeps no descriptor (transient).
constexpr int kTransientLog = -2;
constexpr int kLogOpenFlags = O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NONBLOCK | O_NOCTTY;
// The log file's (st_dev, st_ino) when last opened, under the log's mutex: a transient
// descriptor is written only while it names that file.
dev_t g_log_device = 0;
ino_t g_log_inode = 0;
std::atomic<bool> g_jsonl{false};

// The log on the process's own stderr ([log] path = "stderr"), under the log's mutex. Its
// descriptors (up to three) are published for the close hooks, which read them without the lock.
telemetry::StderrStream* g_stderr = nullptr;  // never freed, like the formatters
std::atomic<int> g_stderr_relay_fds[2] = {-1, -1};
// The app closed fd 2 (or put another file there) from a signal handler that interrupted a write
// of the log: the writer lets it go after that write.
std::atomic<bool> g_stderr_release_pending{false};
// Records stderr could not take, and the room a record's fields have within PIPE_BUF.
std::atomic<std::uint64_t> g_stderr_dropped_full{0};
std::atomic<std::uint64_t> g_stderr_dropped_too_long{0};
std::size_t g_stderr_field_budget = telemetry::kStderrRecordLimit;
// The start record waits for the process's first other record on stderr: a shell, a health
// check or a cron job that opens no TCP socket writes nothing to the app's stderr.
std::atomic<std::string*> g_pending_start{nullptr};
config::LogLevel g_pending_start_level = config::LogLevel::info;
// The drop notice (a "dropped" record) is not counted when stderr cannot take it either.
thread_local bool t_drop_notice = false;
thread_local bool t_drop_notice_dropped = false;
// Until when this thread's records wait for room on a full stderr pipe (PatientStderrWrites); 0:
// a full pipe drops them.
thread_local std::int64_t t_stderr_patient_until_ns = 0;

void publish_stderr_fds() noexcept {
  g_log_fd.store(g_stderr->descriptor(0), std::memory_order_release);
  g_stderr_relay_fds[0].store(g_stderr->descriptor(1), std::memory_order_release);
  g_stderr_relay_fds[1].store(g_stderr->descriptor(2), std::memory_order_release);
}

// Rotation ([log] rotate_size, keep), all under the log's mutex: the file's path, its size so
// far, and when to move it aside.
std::string* g_log_path = nullptr;
std::uint64_t g_log_bytes = 0;
std::uint64_t g_rotate_size = 0;  // 0: never
int g_keep = 0;
int open_log_fd(const std::string& path, std::string& error);

// path -> path.1 -> ... -> path.keep (the oldest is dropped), then a fresh path.
void rotate_log() {
  for (int i = g_keep - 1; i >= 1; --i) {
    (void)::rename((*g_log_path + "." + std::to_string(i)).c_str(),
                   (*g_log_path + "." + std::to_string(i + 1)).c_str());
  }
  (void)::rename(g_log_path->c_str(), (*g_log_path + ".1").c_str());
  std::string error;
  const int fd = open_log_fd(*g_log_path, error);
  if (fd >= 0 || fd == kTransientLog) {
    g_log_transient.store(fd == kTransientLog, std::memory_order_release);
    const int previous = g_log_fd.exchange(fd >= 0 ? fd : -1, std::memory_order_acq_rel);
    if (previous >= 0) {
      next::close(previous);
    }
  }
  g_log_bytes = 0;  // on failure the old descriptor keeps writing to path.1
}

// A write past RLIMIT_FSIZE (`ulimit -f`) raises SIGXFSZ at the writing thread, and its default
// action kills the process: held off around the log's write (held_signals.hpp).
ssize_t write_holding_sigxfsz(int fd, const void* data, std::size_t size) noexcept {
  if (t_signals_blocked || g_file_size_unlimited.load(std::memory_order_acquire)) {
    return next::write(fd, data, size);
  }
  telemetry::HeldSignals held;
  const ssize_t written = next::write(fd, data, size);
  held.take_back(written < 0 ? errno : 0);
  return written;
}

// Once a write fails (a full disk, the file size limit, an I/O error) the log ends: no later
// line could follow the lost one honestly, and each attempt would cost the app a system call.
std::atomic<bool> g_log_ended{false};
std::string* g_program = nullptr;  // for the one line on stderr
sockaddr_un g_cut_notice{};        // tcptune run's, when it listens (log_cut_notice.hpp)
socklen_t g_cut_notice_length = 0;

}  // namespace

// Never blocking, and not into a network socket (an inetd-style program's stderr is its connection).
void say_on_stderr(const std::string& text) noexcept {
  try {
    const auto stream = std::make_unique<telemetry::StderrStream>();
    if (stream->open(3) == nullptr) {
      (void)stream->write(text);
    }
  } catch (...) {
  }
}

namespace {

void send_cut_notice(const std::string& path, const std::string& reason) noexcept {
  if (g_cut_notice_length == 0) {
    return;
  }
  const int notice = next::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (notice < 0) {
    return;
  }
  const std::string text = config::log_cut_notice(path, reason);
  (void)next::sendto(notice, text.data(), text.size(), MSG_DONTWAIT, reinterpret_cast<const sockaddr*>(&g_cut_notice),
                     g_cut_notice_length);
  next::close(notice);
}

// Under the log's mutex: `partial` bytes of the failed line reached the file and are cut off
// again, so the log ends at its last whole line; one line on stderr says so.
void end_log(int fd, std::size_t partial, int error) noexcept {
  g_log_ended.store(true, std::memory_order_release);
  if (partial > 0) {
    // O_APPEND: the offset is just past this write's bytes, even if other processes append too.
    const off_t end = ::lseek(fd, 0, SEEK_CUR);
    if (end >= static_cast<off_t>(partial)) {
      (void)::ftruncate(fd, end - static_cast<off_t>(partial));
    }
  }
  try {
    const std::string reason = error != 0 ? std::generic_category().message(error)
                                          : std::string("short write (the file size limit, or a full disk)");
    const std::string path = g_log_path != nullptr ? *g_log_path : std::string("?");
    say_on_stderr("tcptune: log " + config::escape_for_display(path, false) + ": " + reason + "; it ends here, " +
                  config::escape_for_display(g_program != nullptr ? *g_program : std::string(), false) + " (pid " +
                  std::to_string(getpid()) + ") runs on, its later records are lost\n");
    send_cut_notice(path, reason);
  } catch (...) {
  }
}

// Under the log's mutex: the app let its stderr go (closed fd 2, or put another file there), so
// the log lets it go too: a pipe's reader sees its end, and the records never follow fd 2's number
// to whatever the app opens next.
void release_stderr_locked() noexcept {
  g_stderr_release_pending.store(false, std::memory_order_relaxed);
  g_stderr->close();
  publish_stderr_fds();
  g_log_ended.store(true, std::memory_order_release);
}

void write_to_stderr(std::string_view line) noexcept {
  if (g_stderr_release_pending.load(std::memory_order_acquire)) {
    release_stderr_locked();
    return;
  }
  telemetry::StderrStream::Result result = g_stderr->write(line);
  while (result == telemetry::StderrStream::Result::full && t_stderr_patient_until_ns != 0 &&
         g_stderr->drained_after_full()) {
    const std::int64_t left_ms = (t_stderr_patient_until_ns - monotonic_ns()) / 1'000'000;
    if (left_ms <= 0 || !g_stderr->wait_for_room(static_cast<int>(left_ms))) {
      break;
    }
    result = g_stderr->write(line);  // the app's own lines may have taken the room first
  }
  publish_stderr_fds();  // a forked child's first write opens them again
  switch (result) {
    case telemetry::StderrStream::Result::written: break;
    case telemetry::StderrStream::Result::full:
      if (t_drop_notice) {
        t_drop_notice_dropped = true;
      } else {
        g_stderr_dropped_full.fetch_add(1, std::memory_order_relaxed);
      }
      break;
    case telemetry::StderrStream::Result::too_long:
      g_stderr_dropped_too_long.fetch_add(1, std::memory_order_relaxed);
      break;
    case telemetry::StderrStream::Result::ended:
      // Its reader is gone (EPIPE) or the descriptor failed: nobody would see a message either.
      release_stderr_locked();
      break;
  }
  if (g_stderr_release_pending.load(std::memory_order_acquire)) {
    release_stderr_locked();
  }
}

bool same_file(const struct stat& info, dev_t device, ino_t inode) noexcept {
  return info.st_dev == device && info.st_ino == inode;
}

// Under the log's mutex, in transient mode: the log file opened for one write, its number
// published (from then on the close and dup2 hooks treat it as the shim's, and a dup2 onto it
// waits for the write), and written only if that number still names the log file: the app may
// have put a file of its own there (dup2, close) between the open and the publication, where no
// hook could know the number was the shim's. -1 when no number is free, or it is not the log's.
int open_transient_log() noexcept {
  if (g_log_path == nullptr) {
    return -1;
  }
  const int fd = ::open(g_log_path->c_str(), kLogOpenFlags, 0644);
  if (fd < 0) {
    return -1;
  }
  g_log_fd.store(fd, std::memory_order_release);
  struct stat info {};
  if (::fstat(fd, &info) != 0) {
    g_log_fd.store(-1, std::memory_order_release);
    return -1;  // closed by the app meanwhile: nothing of the shim's to close
  }
  if (same_file(info, g_log_device, g_log_inode)) {
    return fd;
  }
  // Another file: the path names a new one (the old moved away by logrotate), or the number is
  // the app's now (left open: it is not the shim's to close).
  struct stat at_path {};
  if (S_ISREG(info.st_mode) && ::stat(g_log_path->c_str(), &at_path) == 0 &&
      same_file(at_path, info.st_dev, info.st_ino)) {
    g_log_device = info.st_dev;
    g_log_inode = info.st_ino;
    g_log_bytes = static_cast<std::uint64_t>(info.st_size);
    return fd;
  }
  g_log_fd.store(-1, std::memory_order_release);
  return -1;
}

// Its number goes back to the app: unpublished first, so that the hooks never take an app's
// descriptor of that number for the shim's. The one published now: a signal handler that
// interrupted the write may have moved it away from a number the app dup2()ed onto.
void close_transient_log() noexcept {
  const int fd = g_log_fd.exchange(-1, std::memory_order_acq_rel);
  if (fd >= 0) {
    next::close(fd);
  }
}

// Under the log's mutex: whole lines in one write(2). False when the log ended there.
bool write_to_file(int fd, std::string_view text) noexcept {
  ssize_t written = 0;
  do {
    written = write_holding_sigxfsz(fd, text.data(), text.size());
  } while (written < 0 && errno == EINTR);
  if (written != static_cast<ssize_t>(text.size())) {
    // A regular file writes short only at its size limit or a full disk: never reaches the app.
    // The lines written whole stay; the part of the one cut short goes.
    const int error = written < 0 ? errno : 0;
    const std::size_t reached = written > 0 ? static_cast<std::size_t>(written) : 0;
    const std::size_t last_newline = text.substr(0, reached).rfind('\n');
    end_log(fd, last_newline == std::string_view::npos ? reached : reached - last_newline - 1, error);
    return false;
  }
  g_log_bytes += text.size();
  return true;
}

// Under the log's mutex, in transient mode: the lines waiting for a free number, then `line`
// (empty: only those waiting), in one write; without a free number `line` waits too.
bool write_transient(std::string_view line) noexcept {
  try {
    if (g_waiting_lines == nullptr) {
      g_waiting_lines = new std::string;
    }
    const int fd = open_transient_log();
    if (fd < 0) {
      if (g_waiting_lines->size() + line.size() > kMostWaiting) {
        g_lines_without_descriptor.fetch_add(1, std::memory_order_relaxed);
      } else {
        g_waiting_lines->append(line);
      }
      return false;
    }
    g_waiting_lines->append(line);
    const bool written = write_to_file(fd, *g_waiting_lines);
    g_waiting_lines->clear();
    close_transient_log();
    return written;
  } catch (...) {
    g_lines_without_descriptor.fetch_add(1, std::memory_order_relaxed);  // out of memory
    return false;
  }
}

// Writes formatted lines to g_log_fd through the next write(), never through our own hook,
// each line in one write(2); or to stderr (write_to_stderr).
// Under the log's mutex: `text` (whole lines) to the file, then the file rotated if it has
// grown past rotate_size.
void write_lines(std::string_view text) noexcept {
  const bool written = g_log_transient.load(std::memory_order_acquire)
                           ? write_transient(text)
                           : write_to_file(g_log_fd.load(std::memory_order_relaxed), text);
  if (written && g_rotate_size != 0 && g_log_bytes >= g_rotate_size && g_log_path != nullptr) {
    rotate_log();  // between lines: every file holds whole records
  }
}

// Under the log's mutex: the lines gathered so far, in one write.
void write_pending_lines() noexcept {
  if (g_pending_lines != nullptr && !g_pending_lines->empty()) {
    if (!g_log_ended.load(std::memory_order_acquire)) {
      write_lines(*g_pending_lines);
    }
    g_pending_lines->clear();
  }
}

// Gathers `text` with the lines waiting; false when it must be written now instead: outside a
// batch, where it would reach the batch's limit or rotate_size (the file moves aside exactly
// where one line at a time would move it), in transient mode, or out of memory.
bool gather(std::string_view text) noexcept {
  if (!t_batching || g_log_transient.load(std::memory_order_acquire)) {
    return false;
  }
  const std::size_t gathered = (g_pending_lines != nullptr ? g_pending_lines->size() : 0) + text.size();
  if (gathered >= kBatchBytes || (g_rotate_size != 0 && g_log_bytes + gathered >= g_rotate_size)) {
    return false;
  }
  try {
    if (g_pending_lines == nullptr) {
      g_pending_lines = new std::string;
      g_pending_lines->reserve(kBatchBytes);
    }
    g_pending_lines->append(text);
    return true;
  } catch (...) {
    return false;
  }
}

// Under the log's mutex: one formatted line to the log, through the next write(), never
// through our own hook: whole lines in one write(2) (the worker's, gathered per wake-up); or
// to stderr (write_to_stderr), one record per write.
void deliver(std::string_view text) noexcept {
  if (g_log_ended.load(std::memory_order_acquire)) {
    return;
  }
  if (g_stderr != nullptr) {
    write_to_stderr(text);
    return;
  }
  if (gather(text)) {
    return;
  }
  if (g_pending_lines != nullptr && !g_pending_lines->empty()) {
    // After the lines gathered before it, in the same write where memory allows.
    try {
      g_pending_lines->append(text);
      write_pending_lines();
      return;
    } catch (...) {
      write_pending_lines();
    }
  }
  if (!g_log_ended.load(std::memory_order_acquire)) {
    write_lines(text);
  }
}

// %P: the pid noted when the log opened (or the child forked), not a getpid() per line.
class CachedPidFlag final : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& /*message*/, const std::tm& /*time*/,
              spdlog::memory_buf_t& destination) override {
    spdlog::details::fmt_helper::append_int(g_log_pid.load(std::memory_order_relaxed), destination);
  }
  [[nodiscard]] std::unique_ptr<custom_flag_formatter> clone() const override {
    return std::make_unique<CachedPidFlag>();
  }
};

LineFormatters* make_formatters(const std::string& pattern, spdlog::pattern_time_type time) {
  auto formatter = std::make_unique<spdlog::pattern_formatter>(time);
  formatter->add_flag<CachedPidFlag>('P').set_pattern(pattern);
  auto formatters = std::make_unique<LineFormatters>();
  for (LineFormatters::Spare& spare : formatters->spares) {
    spare.formatter = formatter->clone();
  }
  formatters->locked = std::move(formatter);
  return formatters.release();
}

// Formats `message` with a spare formatter, outside the log's mutex; false when none is free.
bool format_unlocked(LineFormatters& formatters, const spdlog::details::log_msg& message,
                     spdlog::memory_buf_t& line) noexcept {
  for (LineFormatters::Spare& spare : formatters.spares) {
    if (spare.busy.load(std::memory_order_relaxed) || spare.busy.exchange(true, std::memory_order_acquire)) {
      continue;
    }
    bool formatted = true;
    try {
      spare.formatter->format(message, line);
    } catch (...) {
      formatted = false;
      line.clear();
    }
    spare.busy.store(false, std::memory_order_release);
    return formatted;
  }
  return false;
}

// Set while this thread is inside the logger, so that a signal handler that closes a
// socket mid-message skips logging instead of deadlocking.
thread_local bool t_in_logger = false;
struct InsideLogger {
  InsideLogger() noexcept { t_in_logger = true; }
  ~InsideLogger() { t_in_logger = false; }
  InsideLogger(const InsideLogger&) = delete;
  InsideLogger& operator=(const InsideLogger&) = delete;
};

spdlog::level::level_enum to_spdlog(config::LogLevel level) {
  switch (level) {
    case config::LogLevel::trace: return spdlog::level::trace;
    case config::LogLevel::debug: return spdlog::level::debug;
    case config::LogLevel::info: return spdlog::level::info;
    case config::LogLevel::warn: return spdlog::level::warn;
    case config::LogLevel::error: return spdlog::level::err;
    case config::LogLevel::off: return spdlog::level::off;
  }
  return spdlog::level::off;
}

// mkdir -p of the log's directory, as a user writing "/var/log/tcptune/{program}.log" expects.
void create_parent_directories(const std::string& path) {
  for (std::size_t slash = path.find('/', 1); slash != std::string::npos; slash = path.find('/', slash + 1)) {
    (void)::mkdir(path.substr(0, slash).c_str(), 0755);
  }
}

}  // namespace

namespace {

// Opens `path` for appending at a high, close-on-exec number; returns the fd, or -1 with
// the reason in `error`. Also notes the path and its size, for rotation.
int open_log_fd(const std::string& path, std::string& error) {
  create_parent_directories(path);
  // O_NONBLOCK: a FIFO must not hang start-up waiting for a reader (without one the open fails
  // with ENXIO); on a regular file it changes nothing. Only a regular file is a log: a FIFO or
  // a device would block the writer or lose the lines.
  const int opened = ::open(path.c_str(), kLogOpenFlags, 0644);
  struct stat info {};
  if (opened < 0) {
    const int open_error = errno;
    // strerror's text without its buffer, which the app's threads may be using too.
    error = "cannot open log file " + path + ": " +
            (::stat(path.c_str(), &info) == 0 && !S_ISREG(info.st_mode) ? config::not_a_regular_file(info.st_mode)
                                                                        : std::generic_category().message(open_error));
    return -1;
  }
  const bool stated = ::fstat(opened, &info) == 0;
  if (!stated || !S_ISREG(info.st_mode)) {
    error = "cannot open log file " + path + ": " +
            (stated ? config::not_a_regular_file(info.st_mode) : std::generic_category().message(errno));
    next::close(opened);
    return -1;
  }
  g_log_bytes = static_cast<std::uint64_t>(info.st_size);
  if (g_log_path == nullptr) {
    g_log_path = new std::string(path);  // never freed, like the formatters
  } else {
    *g_log_path = path;
  }
  g_log_device = info.st_dev;
  g_log_inode = info.st_ino;
  const int fd = telemetry::copy_out_of_app_range(opened, kLogFdFloor);
  next::close(opened);
  return fd >= 0 ? fd : kTransientLog;
}

}  // namespace

std::string open_log(const std::string& path, config::LogLevel level, config::LogFormat format,
                     std::string_view program, std::string_view arm) {
  if (path.empty() || level == config::LogLevel::off) {
    return {};
  }
  g_log_pid.store(static_cast<int>(getpid()), std::memory_order_relaxed);
  refresh_log_file_size_limit();
  std::string error;
  if (config::is_stderr_log(path)) {
    auto* stream = new telemetry::StderrStream;  // never freed, like the formatters
    if (const char* why = stream->open(kLogFdFloor); why != nullptr) {
      delete stream;
      return std::string("cannot log to stderr: ") + why;
    }
    g_stderr = stream;
    publish_stderr_fds();
    g_log_path = new std::string("stderr");
  } else {
    const int fd = open_log_fd(path, error);
    if (fd < 0 && fd != kTransientLog) {
      return error;
    }
    g_log_transient.store(fd == kTransientLog, std::memory_order_release);
    g_log_fd.store(fd >= 0 ? fd : -1, std::memory_order_release);
  }
  try {
    g_program = new std::string(program);  // never freed, like the formatters
    LineFormatters* formatters = nullptr;
    if (format == config::LogFormat::jsonl) {
      std::string program_json;
      telemetry::append_json_string(program_json, program);
      if (!arm.empty()) {
        program_json += ",\"arm\":";
        telemetry::append_json_string(program_json, arm);
      }
      std::string escaped;  // a literal '%' in a pattern is "%%"
      for (const char c : program_json) {
        escaped += c == '%' ? std::string("%%") : std::string(1, c);
      }
      formatters =
          make_formatters(R"({"ts":"%Y-%m-%dT%H:%M:%S.%fZ","level":"%l","pid":%P,"program":)" + escaped + ",%v}",
                          spdlog::pattern_time_type::utc);
      // The envelope around a record's fields: the time (27), "warning", a pid of up to 10
      // digits, the program, the keys and punctuation (under 60).
      constexpr std::size_t kEnvelope = 27 + 7 + 10 + 60;
      const std::size_t envelope = kEnvelope + program_json.size();
      g_stderr_field_budget = envelope < telemetry::kStderrRecordLimit ? telemetry::kStderrRecordLimit - envelope : 0;
    } else {
      formatters = make_formatters("%Y-%m-%dT%H:%M:%S.%f%z %l tcptune[%P] %v", spdlog::pattern_time_type::local);
    }
    const bool jsonl = format == config::LogFormat::jsonl;
    // Records are built only in the form this log writes (record_line).
    telemetry::set_record_forms({.text = !jsonl, .json = jsonl, .json_field_spans = g_stderr != nullptr});
    g_jsonl.store(jsonl, std::memory_order_release);
    const std::lock_guard lock(log_mutex());
    g_formatters.store(formatters, std::memory_order_release);
    g_level.store(static_cast<int>(level), std::memory_order_release);
    return {};
  } catch (const std::exception& exception) {
    return std::string("cannot open log file ") + path + ": " + exception.what();
  }
}

std::string switch_log_file(const std::string& path) {
  if (g_formatters.load(std::memory_order_acquire) == nullptr || g_stderr != nullptr) {
    return {};
  }
  std::string error;
  const int fd = open_log_fd(path, error);
  if (fd < 0 && fd != kTransientLog) {
    return error;
  }
  g_log_transient.store(fd == kTransientLog, std::memory_order_release);
  const int previous = g_log_fd.exchange(fd >= 0 ? fd : -1, std::memory_order_acq_rel);
  if (previous >= 0) {
    next::close(previous);
  }
  return {};
}

void set_log_cut_notice(std::string_view name) noexcept {
  socklen_t length = 0;
  if (config::log_cut_notice_address(name, g_cut_notice, length)) {
    g_cut_notice_length = length;
  }
}

void set_log_rotation(std::uint64_t rotate_size, int keep) {
  const std::lock_guard lock(log_mutex());
  g_rotate_size = keep > 0 && g_stderr == nullptr ? rotate_size : 0;  // stderr is not a file to rotate
  g_keep = keep;
}

bool log_enabled(config::LogLevel level) noexcept {
  return static_cast<int>(level) >= g_level.load(std::memory_order_acquire) && level != config::LogLevel::off;
}

namespace {

std::atomic<LineDeferrer> g_deferrer{nullptr};
thread_local bool t_log_worker = false;

void write_line(config::LogLevel level, std::string_view line) noexcept {
  if (t_in_logger || g_log_ended.load(std::memory_order_acquire)) {
    return;
  }
  if (g_pending_start.load(std::memory_order_relaxed) != nullptr) {
    if (std::string* start = g_pending_start.exchange(nullptr, std::memory_order_acq_rel); start != nullptr) {
      write_line(g_pending_start_level, *start);
      delete start;
    }
  }
  // While the telemetry worker runs, the app's threads hand their lines to it, so one thread
  // writes the log, in the order the ring gives; if it cannot take one, the line goes direct.
  if (const LineDeferrer defer = g_deferrer.load(std::memory_order_acquire); defer != nullptr && !t_log_worker) {
    try {
      if (defer(level, std::string(line))) {
        return;
      }
    } catch (...) {
    }
  }
  LineFormatters* formatters = g_formatters.load(std::memory_order_acquire);
  if (formatters == nullptr || !log_enabled(level)) {
    return;
  }
  const InsideLogger inside;
  try {
    // The time is taken here, and the envelope formatted before the mutex where a spare
    // formatter is free: the mutex covers the write alone.
    const spdlog::details::log_msg message(spdlog::source_loc{}, "tcptune", to_spdlog(level), line);
    spdlog::memory_buf_t text;
    const bool formatted = format_unlocked(*formatters, message, text);
    const std::lock_guard lock(log_mutex());
    if (!formatted) {
      formatters->locked->format(message, text);
    }
    deliver(std::string_view(text.data(), text.size()));
  } catch (...) {
    // A full disk or a bad descriptor must never reach the app.
  }
}

}  // namespace

void set_line_deferrer(LineDeferrer deferrer) noexcept {
  g_deferrer.store(deferrer, std::memory_order_release);
}

void mark_log_worker_thread() noexcept {
  t_log_worker = true;
}

void write_deferred_line(config::LogLevel level, std::string_view line) noexcept {
  write_line(level, line);
}

bool log_is_jsonl() noexcept {
  return g_jsonl.load(std::memory_order_acquire);
}

void log_message(config::LogLevel level, std::string_view message) noexcept {
  if (!log_enabled(level) || g_log_ended.load(std::memory_order_acquire)) {
    return;
  }
  if (!g_jsonl.load(std::memory_order_acquire)) {
    write_line(level, message);
    return;
  }
  telemetry::Record record(level >= config::LogLevel::warn ? "warning" : "log");
  try {
    record.add("message", message);
  } catch (...) {
    return;
  }
  log_record(level, record);
}

namespace {

// The record as the log writes it: on stderr, a JSON record too long for one write of PIPE_BUF
// bytes leaves its longest fields out (named in "omitted"); empty when even that is too long.
std::string record_line(const telemetry::Record& record) {
  if (!g_jsonl.load(std::memory_order_acquire)) {
    return record.text();
  }
  return g_stderr != nullptr ? record.json_fields_within(g_stderr_field_budget) : record.json_fields();
}

}  // namespace

void log_record(config::LogLevel level, const telemetry::Record& record) noexcept {
  if (!log_enabled(level) || g_log_ended.load(std::memory_order_acquire)) {
    return;
  }
  try {
    const std::string line = record_line(record);
    if (line.empty()) {
      g_stderr_dropped_too_long.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    write_line(level, line);
  } catch (...) {
  }
}

void log_start_record(config::LogLevel level, const telemetry::Record& record) noexcept {
  if (g_stderr == nullptr || level >= config::LogLevel::warn || !log_enabled(level)) {
    log_record(level, record);
    return;
  }
  try {
    g_pending_start_level = level;
    delete g_pending_start.exchange(new std::string(record_line(record)), std::memory_order_acq_rel);
  } catch (...) {
  }
}

bool log_drop_notice(config::LogLevel level, const telemetry::Record& record) noexcept {
  t_drop_notice = true;
  t_drop_notice_dropped = false;
  log_record(level, record);
  t_drop_notice = false;
  return !t_drop_notice_dropped && !g_log_ended.load(std::memory_order_acquire);
}

bool log_on_stderr() noexcept {
  return g_stderr != nullptr;
}

PatientStderrWrites::PatientStderrWrites(int patience_ms) noexcept {
  t_stderr_patient_until_ns = monotonic_ns() + std::int64_t{patience_ms} * 1'000'000;
}

PatientStderrWrites::~PatientStderrWrites() {
  t_stderr_patient_until_ns = 0;
}

void write_waiting_log_lines() noexcept {
  if (!g_log_transient.load(std::memory_order_acquire) || g_log_ended.load(std::memory_order_acquire) || t_in_logger) {
    return;
  }
  const InsideLogger inside;
  try {
    const std::lock_guard lock(log_mutex());
    if (g_waiting_lines != nullptr && !g_waiting_lines->empty()) {
      (void)write_transient({});
    }
  } catch (...) {
  }
}

std::uint64_t log_lines_without_descriptor() noexcept {
  return g_lines_without_descriptor.load(std::memory_order_relaxed);
}

telemetry::LogDrops log_drops() noexcept {
  return {g_stderr_dropped_full.load(std::memory_order_relaxed),
          g_stderr_dropped_too_long.load(std::memory_order_relaxed)};
}

void app_releases_stderr() noexcept {
  if (g_stderr == nullptr) {
    return;
  }
  // From a signal handler the lock may be held by the thread it interrupted (inside the logger,
  // or forking): the writer then lets stderr go after its write.
  std::unique_lock lock(log_mutex(), std::defer_lock);
  if (!in_signal_handler()) {
    lock.lock();
  } else if (t_in_logger || !lock.try_lock()) {
    g_stderr_release_pending.store(true, std::memory_order_release);
    return;
  }
  if (g_stderr->is_open()) {
    release_stderr_locked();
  }
}

void detach_stderr_in_child() noexcept {
  if (g_stderr != nullptr) {
    g_stderr->detach_in_child();
    publish_stderr_fds();
    g_stderr_dropped_full.store(0, std::memory_order_relaxed);  // the parent's are the parent's
    g_stderr_dropped_too_long.store(0, std::memory_order_relaxed);
  }
}

bool log_first_time(const std::string& key) {
  static auto* seen = new std::set<std::string>;  // never destroyed, like the formatters
  const InsideLogger inside;
  const std::lock_guard lock(log_mutex());
  return seen->insert(key).second;
}

int log_fds(int (&fds)[kMaxLogFds]) noexcept {
  int count = 0;
  for (const int fd : {g_log_fd.load(std::memory_order_acquire), g_stderr_relay_fds[0].load(std::memory_order_acquire),
                       g_stderr_relay_fds[1].load(std::memory_order_acquire)}) {
    if (fd >= 0) {
      fds[count++] = fd;
    }
  }
  std::sort(fds, fds + count);
  return count;
}

bool is_log_fd(int fd) noexcept {
  return fd >= 0 && (fd == g_log_fd.load(std::memory_order_acquire) ||
                     fd == g_stderr_relay_fds[0].load(std::memory_order_acquire) ||
                     fd == g_stderr_relay_fds[1].load(std::memory_order_acquire));
}

void move_log_fd_away_from(int fd) noexcept {
  if (!is_log_fd(fd)) {
    return;
  }
  // From a signal handler (dup2 is async-signal-safe) that interrupted this thread inside the
  // logger, the mutex is this thread's own: no other thread can be writing, and waiting for it
  // would never end.
  std::unique_lock lock(log_mutex(), std::defer_lock);
  if (!(t_in_logger && in_signal_handler())) {
    lock.lock();
  }
  if (g_stderr != nullptr) {
    g_stderr->move_away_from(fd);
    publish_stderr_fds();
    return;
  }
  if (fd != g_log_fd.load(std::memory_order_acquire)) {
    return;  // no longer the log's (rotated, or a line's transient descriptor, closed meanwhile)
  }
  const int moved = next::fcntl(fd, F_DUPFD_CLOEXEC, fd + 1);
  if (moved >= 0) {
    g_log_fd.store(moved, std::memory_order_release);
    next::close(fd);
  }
}

void log_batch_begin() noexcept {
  t_batching = true;
}

void log_batch_end() noexcept {
  t_batching = false;
  if (g_formatters.load(std::memory_order_acquire) == nullptr || g_stderr != nullptr || t_in_logger) {
    return;
  }
  const InsideLogger inside;
  try {
    const std::lock_guard lock(log_mutex());
    write_pending_lines();
  } catch (...) {
  }
}

void mark_log_thread_signals_blocked() noexcept {
  t_signals_blocked = true;
}

void refresh_log_file_size_limit() noexcept {
  const ErrnoSaver saver;
  rlimit limit{};
  g_file_size_unlimited.store(getrlimit(RLIMIT_FSIZE, &limit) == 0 && limit.rlim_cur == RLIM_INFINITY,
                              std::memory_order_release);
}

void log_after_fork_in_child() noexcept {
  g_log_pid.store(static_cast<int>(getpid()), std::memory_order_relaxed);
  if (g_pending_lines != nullptr) {
    g_pending_lines->clear();  // the parent's, gathered by its worker: the parent writes them
  }
}

void log_prepare_fork() noexcept {
  log_mutex().lock();
}
void log_after_fork() noexcept {
  log_mutex().unlock();
}

}  // namespace tcptune::shim
