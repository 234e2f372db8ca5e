// Running a program under supervision: the child installs the seccomp filter and hands its
// listener over before it execs the program; the parent answers the trapped calls until the
// program and every process it started are gone. The parent is the program's parent and its
// descendants' subreaper, so it sees them all end and never leaves a trapped call unanswered
// (a call trapped after the supervisor is gone would fail with ENOSYS).
#pragma once

#include <linux/filter.h>
#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "socket_access.hpp"
#include "supervisor_log.hpp"
#include "tcptune/config/policy.hpp"

namespace tcptune::supervisor {

// Before fork: makes this process the subreaper of what the child starts.
void prepare_to_supervise() noexcept;

// Whether the filter can be installed only by setting no_new_privs, which makes the kernel ignore
// setuid/setgid bits and file capabilities in everything the program runs: true without
// CAP_SYS_ADMIN in this process's user namespace (the kernel's own condition for a filter without
// it), unless no_new_privs is set already (then tcptune takes nothing away).
bool filter_needs_no_new_privs() noexcept;

// In the child, after fork and before exec: no_new_privs if asked, the filter with a listener,
// the listener sent over `channel`. On failure the errno is sent instead (the program then runs
// untuned) and returned. Async-signal-safe.
int install_in_child(int channel, const std::vector<sock_filter>& filter, bool no_new_privs) noexcept;

// In the parent: the child's listener (close-on-exec), or -1 with why there is none in `problem`.
int receive_listener(int channel, std::string& problem);

struct ServeResult {
  int child_status = 0;  // the program's wait status
  std::uint64_t calls = 0;
  std::uint64_t tuned = 0;
  std::uint64_t records_dropped = 0;         // follow-ups beyond FollowUpQueue's bound
  std::uint64_t processes_left_to_shim = 0;  // preloaded processes that tune themselves
};

// The program supervised: the child the parent started, and its name for the records and the
// textfile's path.
struct Supervised {
  pid_t child = 0;
  std::string program;
  std::string arm;  // TCPTUNE_ARM, validated: the textfile's arm label; empty: none
};

// In the parent: every trapped call answered, with `policy`, until the child has exited and
// nothing supervised is left; orphans are reaped. A second thread writes the records to `log`,
// polls the connections (sock_diag) every `connection_poll_ns` and rewrites the Prometheus
// textfile if the policy sets one. `access`: how sockets are reached here (the filter was built
// with CallTuner::filter_spec(policy, access)). Closes `listener`.
ServeResult serve(int listener, const Supervised& supervised, const config::Policy& policy, SupervisorLog& log,
                  std::int64_t connection_poll_ns, const SocketAccess& access = {});

}  // namespace tcptune::supervisor
