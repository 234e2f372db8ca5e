// Which process wrote a live entry of the merged textfile, and whether it still runs: what
// lets one process of a program take out the gauges of another that died without saying so
// (SIGKILL, a crash).
#pragma once

#include "exposition.hpp"
#include "file_calls.hpp"

namespace tcptune::telemetry {

// This process as it is now (after a fork, the child): pid, start time and pid namespace
// from /proc; the parts /proc does not give stay 0.
ProcessIdentity own_process_identity(const FileCalls& calls);

// False only when `other` has certainly ended: seen from `me`'s pid namespace, its pid is
// gone, a zombie, or another process started at another time. True when it cannot be told
// (another pid namespace, no /proc).
bool may_be_running(const ProcessIdentity& other, const ProcessIdentity& me, const FileCalls& calls);

}  // namespace tcptune::telemetry
