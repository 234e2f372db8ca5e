#include "supervisor_log.hpp"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <system_error>

#include "json_writer.hpp"
#include "tcptune/config/file_type.hpp"
#include "tcptune/config/log_cut_notice.hpp"

namespace tcptune::supervisor {

namespace {

// A batch of lines: one write(2) per some fifty conn_open records.
constexpr std::size_t kBatchBytes = std::size_t{32} * 1024;

const char* level_word(config::LogLevel level) {
  switch (level) {
    case config::LogLevel::trace: return "trace";
    case config::LogLevel::debug: return "debug";
    case config::LogLevel::info: return "info";
    case config::LogLevel::warn: return "warning";
    case config::LogLevel::error: return "error";
    case config::LogLevel::off: return "off";
  }
  return "info";
}

// 2026-12-03T22:41:07.123456Z in UTC (jsonl), or with the local offset (text), as the shim.
std::string timestamp(bool utc) {
  timespec now{};
  clock_gettime(CLOCK_REALTIME, &now);
  tm parts{};
  if (utc) {
    gmtime_r(&now.tv_sec, &parts);
  } else {
    localtime_r(&now.tv_sec, &parts);
  }
  char date[32];
  (void)std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%S", &parts);
  char zone[8] = "Z";
  if (!utc) {
    (void)std::strftime(zone, sizeof zone, "%z", &parts);
  }
  char text[64];
  (void)std::snprintf(text, sizeof text, "%s.%06ld%s", date, now.tv_nsec / 1000, zone);
  return text;
}

// tcptune run, which prints the table, hears of it too (log_cut_notice.hpp).
void send_cut_notice(const std::string& path, const std::string& reason) {
  const char* name = std::getenv(config::kLogCutNoticeEnv);
  sockaddr_un address{};
  socklen_t length = 0;
  if (name == nullptr || !config::log_cut_notice_address(name, address, length)) {
    return;
  }
  const int notice = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (notice >= 0) {
    const std::string text = config::log_cut_notice(path, reason);
    (void)sendto(notice, text.data(), text.size(), MSG_DONTWAIT, reinterpret_cast<const sockaddr*>(&address), length);
    close(notice);
  }
}

}  // namespace

SupervisorLog::~SupervisorLog() {
  flush();
  if (fd_ >= 0) {
    close(fd_);
  }
}

std::string SupervisorLog::open(const std::string& path, config::LogLevel level, config::LogFormat format,
                                const std::string& arm) {
  if (path.empty() || level == config::LogLevel::off) {
    return {};
  }
  arm_ = arm;
  if (config::is_stderr_log(path)) {
    auto stream = std::make_unique<telemetry::StderrStream>();
    if (const char* why = stream->open(3); why != nullptr) {
      return std::string("cannot log to stderr: ") + why;
    }
    stderr_ = std::move(stream);
    path_ = "stderr";
    level_ = level;
    format_ = format;
    return {};
  }
  // As the shim's log: O_NONBLOCK so that a FIFO without a reader fails (ENXIO) instead of
  // blocking the supervisor, and with it every call the program makes that it traps; only a
  // regular file is a log (a FIFO or a device would block the supervisor's writes).
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NONBLOCK | O_NOCTTY, 0644);
  struct stat info {};
  if (fd < 0) {
    const int open_error = errno;
    return "cannot open log file " + path + ": " +
           (::stat(path.c_str(), &info) == 0 && !S_ISREG(info.st_mode) ? config::not_a_regular_file(info.st_mode)
                                                                       : std::generic_category().message(open_error));
  }
  if (::fstat(fd, &info) != 0 || !S_ISREG(info.st_mode)) {
    close(fd);
    return "cannot open log file " + path + ": " + config::not_a_regular_file(info.st_mode);
  }
  fd_ = fd;
  path_ = path;
  level_ = level;
  format_ = format;
  return {};
}

bool SupervisorLog::enabled(config::LogLevel level) const noexcept {
  return (fd_ >= 0 || (stderr_ != nullptr && stderr_->is_open())) && level >= level_ && level != config::LogLevel::off;
}

std::string SupervisorLog::line_prefix(config::LogLevel level, pid_t pid, std::string_view program) const {
  if (format_ != config::LogFormat::jsonl) {
    return timestamp(false) + " " + level_word(level) + " tcptune[" + std::to_string(pid) + "] ";
  }
  std::string prefix = "{\"ts\":\"" + timestamp(true) + "\",\"level\":\"" + level_word(level) +
                       "\",\"pid\":" + std::to_string(pid) + ",\"program\":";
  telemetry::append_json_string(prefix, program);
  if (!arm_.empty()) {
    prefix += ",\"arm\":";
    telemetry::append_json_string(prefix, arm_);
  }
  return prefix + ",";
}

void SupervisorLog::write(config::LogLevel level, pid_t pid, std::string_view program,
                          const telemetry::Record& record) {
  if (!enabled(level)) {
    return;
  }
  const std::string prefix = line_prefix(level, pid, program);
  if (format_ != config::LogFormat::jsonl) {
    pending_ += prefix + record.text() + "\n";
  } else if (stderr_ == nullptr) {
    pending_ += prefix + record.json_fields() + "}\n";
  } else {
    // One write of PIPE_BUF bytes at most: the longest fields are left out ("omitted").
    const std::size_t envelope = prefix.size() + 2;
    const std::string fields = envelope < telemetry::kStderrRecordLimit
                                   ? record.json_fields_within(telemetry::kStderrRecordLimit - envelope)
                                   : std::string();
    if (fields.empty()) {
      ++drops_.too_long;
      return;
    }
    pending_ += prefix + fields + "}\n";
  }
  if (pending_.size() >= kBatchBytes) {
    flush();
  }
}

void SupervisorLog::write_lines_to_stderr() noexcept {
  std::size_t start = 0;
  while (start < pending_.size() && stderr_->is_open()) {
    const std::size_t end = pending_.find('\n', start);
    const std::size_t next = end == std::string::npos ? pending_.size() : end + 1;
    switch (stderr_->write(std::string_view(pending_).substr(start, next - start))) {
      case telemetry::StderrStream::Result::written: break;
      case telemetry::StderrStream::Result::full: ++drops_.full; break;
      case telemetry::StderrStream::Result::too_long: ++drops_.too_long; break;
      case telemetry::StderrStream::Result::ended: stderr_->close(); break;  // its reader is gone
    }
    start = next;
  }
  pending_.clear();
}

void SupervisorLog::report_drops_on_stderr() noexcept {
  if (drops_.total() == drops_reported_.total() || !stderr_->is_open()) {
    return;
  }
  try {
    const telemetry::Record record = telemetry::log_drops_record(drops_, drops_reported_);
    const std::string line = line_prefix(config::LogLevel::warn, getpid(), "tcptune") +
                             (format_ == config::LogFormat::jsonl ? record.json_fields() + "}" : record.text()) + "\n";
    if (stderr_->write(line) == telemetry::StderrStream::Result::written) {
      drops_reported_ = drops_;
    }
  } catch (...) {
  }
}

void SupervisorLog::flush() noexcept {
  if (stderr_ != nullptr) {
    write_lines_to_stderr();
    report_drops_on_stderr();
    return;
  }
  if (fd_ >= 0 && !pending_.empty()) {
    const off_t before = lseek(fd_, 0, SEEK_END);
    const ssize_t written = ::write(fd_, pending_.data(), pending_.size());
    if (written != static_cast<ssize_t>(pending_.size())) {
      // A full disk, the file size limit (SIGXFSZ is ignored: EFBIG), an I/O error. The log
      // ends here, at its last whole line: a short write's part is cut off again.
      const std::string why =
          written < 0 ? std::generic_category().message(errno) : "short write (the file size limit, or a full disk)";
      if (written > 0 && before >= 0) {
        (void)ftruncate(fd_, before);
      }
      (void)std::fprintf(stderr, "tcptune: log %s: %s; the supervised program's later records are lost\n",
                         path_.c_str(), why.c_str());
      try {
        send_cut_notice(path_, why);
      } catch (...) {
      }
      close(fd_);
      fd_ = -1;
    }
  }
  pending_.clear();
}

}  // namespace tcptune::supervisor
