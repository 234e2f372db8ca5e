// Keep-warm: in-band heartbeats on idle connections. Linux shrinks the congestion window of a
// connection that sent no payload for longer than its RTO (tcp_slow_start_after_idle), and
// only payload resets that clock (kernel-notes.md): keepalive probes do not. So the worker
// sends the rule's heartbeat bytes, which the peer's protocol must ignore between messages,
// whenever a connection has sent nothing for `interval` (auto: just under its RTO), and only while
// a restart would cost something: the connection is established, nothing is in flight, its
// window is above the initial one, and the app wrote within `max_idle`.
#pragma once

#include <optional>

#include "option_applier.hpp"
#include "socket_slot.hpp"
#include "tcptune/config/policy.hpp"

namespace tcptune::shim {

// App thread, when a connection's rule is applied: keeps it warm if the rule asks and a
// restart is possible here (the namespace restarts after idle, the congestion control is not
// BBR). The report says what was decided and why; nothing when the rule does not ask.
std::optional<OptionReport> start_keep_warm(int fd, SocketSlot& slot, const config::Tuning& tuning, SocketRole role,
                                            ApplyPhase phase);

// The app duplicated the descriptor (or a child shares it): writes through the other one
// would bypass this fd's gate, so the connection is no longer kept warm. Waits for a
// heartbeat in progress.
void stop_keep_warm(SocketSlot& slot) noexcept;

// Fork (or spawn) parent: a kept-warm socket the child shares may be written by the
// child or a program it executes, past this process's gate: it is no longer kept warm.
void keep_warm_after_fork_in_parent() noexcept;
// True once any connection of this process was kept warm (then a vfork child's closes are
// worth a getpid each: see socket_events.cpp).
bool keep_warm_started() noexcept;
// A child is about to exec a program (system, popen, a vfork child): the sockets it inherits,
// those without FD_CLOEXEC, may be written by that program past this process's gate, so they
// are no longer kept warm. In a vfork child this changes the parent's state, which is the point.
void keep_warm_before_exec_in_child() noexcept;
// Fork child: sockets shared with the parent are not kept warm here, and the parent's worker,
// which may have held a gate when the process forked, does not exist.
void keep_warm_after_fork_in_child() noexcept;

}  // namespace tcptune::shim
