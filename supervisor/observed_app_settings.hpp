// What the supervised program set on a socket itself before connect or listen, read from the
// socket: the supervisor does not see those setsockopt calls, so it infers them from values
// that differ from a fresh socket's. The policy then leaves them alone, as the shim does for
// the calls it saw, unless it forces them.
#pragma once

#include <string>

#include "app_settings.hpp"
#include "tcptune/config/policy.hpp"

namespace tcptune::supervisor {

// Only the options `tuning` sets are read: the applier asks after no other (each read is a
// system call while the program's call waits). `host` gives a fresh socket's buffers
// (tcp_rmem[1], tcp_wmem[1]); `host_congestion` the namespace's default algorithm; `family`
// the socket's.
shim::AppSettings observe_app_settings(int fd, const config::Tuning& tuning, int family,
                                       const shim::HostBufferFacts& host, const std::string& host_congestion);

}  // namespace tcptune::supervisor
