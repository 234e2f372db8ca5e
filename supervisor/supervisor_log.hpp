// The supervisor's log: the same records, in the same envelope, as the preloaded shim writes
// ({"ts","level","pid","program",...} in jsonl; "TIME LEVEL tcptune[PID] ..." in text), with the
// supervised process's pid and program, so tcptune report reads both alike.
#pragma once

#include <sys/types.h>

#include <string>
#include <string_view>

#include "record.hpp"
#include "tcptune/config/log_destination.hpp"

namespace tcptune::supervisor {

class SupervisorLog {
 public:
  SupervisorLog() = default;  // no log
  ~SupervisorLog();
  SupervisorLog(const SupervisorLog&) = delete;
  SupervisorLog& operator=(const SupervisorLog&) = delete;

  // Opens `path` for appending (created 0644). Empty on success, else a one-line reason.
  std::string open(const std::string& path, config::LogLevel level, config::LogFormat format);
  [[nodiscard]] bool enabled(config::LogLevel level) const noexcept;
  // One line, kept until flush or until a batch is full: a write(2) per record cost the
  // supervisor more than any other step of a connect.
  void write(config::LogLevel level, pid_t pid, std::string_view program, const telemetry::Record& record);
  // The lines kept so far, in one write(2) of whole lines, so that lines from several writers
  // never interleave. The supervisor flushes at least every 100 ms, and at exit. A failed or
  // short write ends the log, with one line on stderr.
  void flush() noexcept;

 private:
  std::string pending_;
  std::string path_;
  int fd_ = -1;
  config::LogLevel level_ = config::LogLevel::off;
  config::LogFormat format_ = config::LogFormat::jsonl;
};

}  // namespace tcptune::supervisor
