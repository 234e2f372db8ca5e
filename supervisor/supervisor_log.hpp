// The supervisor's log: the same records, in the same envelope, as the preloaded shim writes
// ({"ts","level","pid","program",...} in jsonl; "TIME LEVEL tcptune[PID] ..." in text), with the
// supervised process's pid and program, so tcptune report reads both alike.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>
#include <string_view>

#include "prometheus_textfile.hpp"
#include "record.hpp"
#include "stderr_stream.hpp"
#include "tcptune/config/log_destination.hpp"

namespace tcptune::supervisor {

class SupervisorLog {
 public:
  SupervisorLog() = default;  // no log
  ~SupervisorLog();
  SupervisorLog(const SupervisorLog&) = delete;
  SupervisorLog& operator=(const SupervisorLog&) = delete;

  // Opens `path` for appending (created 0644), or tcptune's own stderr for "stderr"
  // (config::is_stderr_log; stderr_stream.hpp). Empty on success, else a one-line reason.
  // `arm` (TCPTUNE_ARM, validated): "arm" after "program" on every jsonl line; empty: none.
  std::string open(const std::string& path, config::LogLevel level, config::LogFormat format,
                   const std::string& arm = {});
  [[nodiscard]] bool enabled(config::LogLevel level) const noexcept;
  // One line, kept until flush or until a batch is full: a write(2) per record cost the
  // supervisor more than any other step of a connect.
  void write(config::LogLevel level, pid_t pid, std::string_view program, const telemetry::Record& record);
  // The lines kept so far, in one write(2) of whole lines, so that lines from several writers
  // never interleave. The supervisor flushes at least every 100 ms, and at exit. A failed or
  // short write ends the log, with one line on stderr. On stderr, one write per line (at most
  // PIPE_BUF bytes, never blocking), then a "dropped" record for those stderr could not take.
  void flush() noexcept;
  [[nodiscard]] bool on_stderr() const noexcept { return stderr_ != nullptr; }
  // Records stderr could not take so far.
  [[nodiscard]] const telemetry::LogDrops& drops() const noexcept { return drops_; }

 private:
  void write_lines_to_stderr() noexcept;
  void report_drops_on_stderr() noexcept;
  std::string line_prefix(config::LogLevel level, pid_t pid, std::string_view program) const;
  std::unique_ptr<telemetry::StderrStream> stderr_;
  telemetry::LogDrops drops_;
  telemetry::LogDrops drops_reported_;
  std::string pending_;
  std::string path_;
  std::string arm_;
  int fd_ = -1;
  config::LogLevel level_ = config::LogLevel::off;
  config::LogFormat format_ = config::LogFormat::jsonl;
};

}  // namespace tcptune::supervisor
