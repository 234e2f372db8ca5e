// What the supervised program set on a socket itself before connect or listen, read from the
// socket: the supervisor does not see those setsockopt calls, so it infers them from values
// that differ from a fresh socket's. The policy then leaves them alone, as the shim does for
// the calls it saw, unless it forces them.
#pragma once

#include <string>

#include "app_settings.hpp"

namespace tcptune::supervisor {

// `host` gives a fresh socket's buffers (tcp_rmem[1], tcp_wmem[1]); `host_congestion` the
// namespace's default algorithm.
shim::AppSettings observe_app_settings(int fd, const shim::HostBufferFacts& host, const std::string& host_congestion);

}  // namespace tcptune::supervisor
