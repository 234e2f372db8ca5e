// Starting the packet mover as a daemon: double fork and setsid, stdio to the log under
// /run/tcptune-linkem/, a pidfile, and a readiness pipe so that `up` returns only once both TUN devices
// exist, are addressed and packets move. The daemon deletes the namespaces when it gets SIGTERM.
#pragma once

#include <sys/types.h>
#include <string>

#include "link_config.hpp"

namespace tcptune::linkem {

// The namespaces must exist. On success 'daemon_pid' is the daemon (no longer our child, unless the
// caller is a child subreaper).
bool start_daemon(const LinkConfig& config, pid_t& daemon_pid, std::string& error);

}  // namespace tcptune::linkem
