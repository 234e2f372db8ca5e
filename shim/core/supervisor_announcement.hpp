// Under a tcptune supervisor (supervised mode keeps the shim in LD_PRELOAD, and its seccomp
// filter reaches every process the program starts), a process whose core is active says so, and
// the supervisor leaves that process's sockets to the core, which measures and tunes more than
// it can (per-write latency, keep-warm). The protocol: tcptune/config/core_announcement.hpp.
#pragma once

namespace tcptune::shim {

// At initialisation, once the policy is loaded (the core is active), before any hook reaches
// the core: where `tcptune run` marked the environment as supervised, the marker is written and
// announced. True when a supervisor took it (it leaves this process alone from now on).
bool announce_to_supervisor() noexcept;

// In a forked child (the fork handler): the child is a process of its own to the supervisor and
// announces itself again where its parent had. One system call; errno preserved.
void announce_to_supervisor_after_fork() noexcept;

}  // namespace tcptune::shim
