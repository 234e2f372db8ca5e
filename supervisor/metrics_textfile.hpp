// The supervisor's Prometheus textfile ([log] prometheus_textfile): the connection watch's
// per-rule counts, the options that missed and the follow-ups dropped, in the shim's format
// less the families that need the program's writes, merged into the file that every process
// of the program shares (textfile_merge.hpp). Rewritten every [log] interval and once at
// exit, by the records thread; a failed write is reported once and never stops the
// supervision.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "call_records.hpp"
#include "connection_watch.hpp"
#include "prometheus_textfile.hpp"
#include "supervisor_log.hpp"
#include "tcptune/config/policy.hpp"
#include "textfile_merge.hpp"

namespace tcptune::supervisor {

class MetricsTextfile {
 public:
  // `program` and `child` fill the path's {program} and {pid}, as the shim's do; `arm`
  // (TCPTUNE_ARM) labels every series, as the shim's does.
  MetricsTextfile(const config::Policy& policy, SupervisorLog& log, const std::string& program, pid_t child,
                  const std::string& arm = {});

  // Writes if [log] interval has passed since the last write; the first call writes. Never
  // waits for another process's merge: the next tick tries again.
  void tick(const ConnectionWatch& watch, const CallRecords& records, std::uint64_t dropped_records);
  // Writes now: the last time, after the watch's last dump (waits up to 1 s for the lock).
  void write_last(const ConnectionWatch& watch, const CallRecords& records, std::uint64_t dropped_records);

 private:
  // False when another process held the lock (nothing written).
  bool write(const ConnectionWatch& watch, const CallRecords& records, std::uint64_t dropped_records, bool leaving);
  void report_once(bool& reported, const std::string& message);

  const config::Policy& policy_;
  SupervisorLog& log_;
  std::string program_;
  pid_t child_;
  std::string arm_;
  std::string path_;  // empty: no textfile
  telemetry::MergedTextfile merged_;
  std::int64_t next_write_ns_ = 0;
  bool error_reported_ = false;
  bool start_over_reported_ = false;
  bool pattern_reported_ = false;
};

}  // namespace tcptune::supervisor
