// The supervisor's records thread: what follows an answered call (FollowUp). The conn_open
// record with the options' effective values (read back on the duplicate now), the veto of a
// setsockopt, the warnings once per rule, the options that missed counted for the textfile, and
// the connection handed to the watch. Runs apart
// from the answering thread, so that the program's calls never wait for a record.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "connection_watch.hpp"
#include "follow_up.hpp"
#include "prometheus_textfile.hpp"
#include "socket_access.hpp"
#include "supervisor_log.hpp"
#include "tcptune/config/policy.hpp"

namespace tcptune::supervisor {

class CallRecords {
 public:
  // `watch` (may be null) follows the tuned connections for their conn_close records; `access`
  // is how the supervisor reaches sockets here, for the warnings that say why it cannot.
  CallRecords(const config::Policy& policy, SupervisorLog& log, ConnectionWatch* watch,
              const SocketAccess& access = {});

  // Writes what `done` calls for; never throws (a record lost to a failure is only lost).
  void record(FollowUp& done);
  // Options that did not take effect as asked, per rule, option and outcome, for the textfile.
  [[nodiscard]] std::vector<telemetry::OptionMiss> option_misses() const;

 private:
  void record_tuned(FollowUp& done);
  void record_setsockopt(FollowUp& done);
  void record_untuned(const FollowUp& done);
  void warn_once(const std::string& key, pid_t pid, const std::string& program, const std::string& message);

  const config::Policy& policy_;
  SupervisorLog& log_;
  ConnectionWatch* watch_;
  SocketAccess access_;
  std::set<std::string> warned_;
  std::set<std::string> vetoes_logged_;
  std::map<std::tuple<int, std::string, std::string>, std::uint64_t> option_misses_;
};

}  // namespace tcptune::supervisor
