// The supervisor's Prometheus textfile ([log] prometheus_textfile): the connection watch's
// per-rule counts and the follow-ups dropped, in the shim's format less the families that need
// the program's writes. Rewritten every [log] interval and once at exit, by the records thread;
// a failed write is reported once and never stops the supervision.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>

#include "connection_watch.hpp"
#include "supervisor_log.hpp"
#include "tcptune/config/policy.hpp"

namespace tcptune::supervisor {

class MetricsTextfile {
 public:
  // `program` and `child` fill the path's {program} and {pid}, as the shim's do.
  MetricsTextfile(const config::Policy& policy, SupervisorLog& log, const std::string& program, pid_t child);

  // Writes if [log] interval has passed since the last write; the first call writes.
  void tick(const ConnectionWatch& watch, std::uint64_t dropped_records);
  // Writes now: the last time, after the watch's last dump.
  void write(const ConnectionWatch& watch, std::uint64_t dropped_records);

 private:
  const config::Policy& policy_;
  SupervisorLog& log_;
  std::string program_;
  pid_t child_;
  std::string path_;  // empty: no textfile
  std::int64_t next_write_ns_ = 0;
  bool error_reported_ = false;
};

}  // namespace tcptune::supervisor
