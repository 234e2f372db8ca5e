// What the supervisor does with one trapped call: for a connect or listen of a TCP socket not
// yet connected or listening, choose the rule exactly as the shim does (peer, port, role,
// program), apply it with the shim's tuning core on a duplicate of the socket, and let the call
// go on; its records follow on the records thread (CallRecords). For a setsockopt the policy overrides (TCP_NODELAY=0
// and TCP_CORK under nodelay = "force", keepalive where the rule sets keepalive) on a connected or listening socket
// where the rule's value is in effect, answer success without making it, so the policy's value stays (a value the
// kernel would refuse is left to the kernel). For an exec (trapped only under no_new_privs) of a file whose
// setuid/setgid bit or file capabilities no_new_privs makes the kernel ignore, a warning names it; every exec goes
// on. Any failure lets the call go on untuned: the program never waits on or
// fails because of the supervisor. Where pidfd_getfd is refused (socket_access.hpp), a TCP
// socket() is trapped too: the supervisor creates the socket and hands it over, holds it until
// its connect or listen (held_sockets.hpp), and judges later setsockopt calls on it from what it
// set then (handed_over_tuning.hpp). A process whose preloaded shim announced that it tunes
// it (preloaded_processes.hpp) is left to the shim: its socket calls go on untouched.
#pragma once

#include <linux/seccomp.h>

#include <cstdint>
#include <set>
#include <string>

#include "app_settings.hpp"
#include "follow_up_queue.hpp"
#include "handed_over_tuning.hpp"
#include "held_sockets.hpp"
#include "option_applier.hpp"
#include "preloaded_processes.hpp"
#include "seccomp_filter.hpp"
#include "socket_access.hpp"
#include "socket_hand_over.hpp"
#include "tcptune/config/policy.hpp"
#include "thread_handles.hpp"

namespace tcptune::supervisor {

class TrappedCall;

class CallTuner {
 public:
  // What follows each answer (records, the watch) goes to `follow_ups`, for the records thread;
  // `effective_values`: the records want the options read back (conn_open is logged);
  // `access`: whether sockets are handed over (the filter then traps TCP socket(), unshare and setns).
  CallTuner(const config::Policy& policy, FollowUpQueue& follow_ups, bool effective_values,
            const SocketAccess& access = {});

  // The calls to trap for `policy`: connect and listen, and the setsockopt pairs it overrides;
  // with `access.hand_over`, TCP socket(), unshare and setns too.
  static FilterSpec filter_spec(const config::Policy& policy, const SocketAccess& access = {});

  // Handles and answers one notification from `listener`.
  void handle(int listener, const seccomp_notif& request);
  // Between calls: held sockets the program has closed are dropped (at most every
  // HeldSockets::kSweepEvery). While some are held the caller comes back at least that often.
  void tick(std::int64_t now_ns) noexcept { held_.sweep_if_due(now_ns); }
  [[nodiscard]] bool holds_sockets() const noexcept { return !held_.empty(); }

  // Calls answered, and sockets tuned, so far.
  [[nodiscard]] std::uint64_t calls() const noexcept { return calls_; }
  [[nodiscard]] std::uint64_t tuned() const noexcept { return tuned_; }
  // Processes whose preloaded shim announced that it tunes them, and their calls let through
  // untouched for it.
  [[nodiscard]] std::uint64_t processes_left_to_shim() const noexcept { return preloaded_.announced(); }
  [[nodiscard]] std::uint64_t calls_left_to_shim() const noexcept { return left_to_shim_; }

 private:
  void tune_connect_or_listen(const TrappedCall& call);
  void keep_policy_over_setsockopt(const TrappedCall& call);
  void keep_policy_from_hand_over(const TrappedCall& call, const HandedOverTuning& tuned, int level, int name,
                                  int value);
  void hand_over_socket(const TrappedCall& call);
  void push_untuned(const TrappedCall& call, FollowUp::Call kind, std::string note, std::string key = {});
  void name_stripped_exec(const TrappedCall& call);
  // What the records thread needs of an answered call on `socket` (its duplicate).
  // The program's name: read at every call when a rule matches on names (an exec shows at once),
  // else at the thread's first call only (a thread that execs in place keeps its old name in
  // the records).
  std::string program_of(pid_t thread);
  FollowUp follow_up_of(const TrappedCall& call, FollowUp::Call kind, int rule, const std::string& program);

  const config::Policy& policy_;
  FollowUpQueue& follow_ups_;
  bool effective_values_;
  shim::HostBufferFacts host_;
  std::string host_congestion_;
  // Ports the program listens on: a connected socket on one of them was accepted (role server).
  std::set<std::uint16_t> listening_ports_;
  ThreadHandles threads_;
  bool matches_on_program_;
  bool hand_over_;
  bool traps_setsockopt_;
  bool add_fd_unsupported_ = false;  // a kernel before 5.14: every socket() goes on untuned
  HandOverCheck hand_over_check_;
  HeldSockets held_;
  HandedOverTunings handed_over_;
  PreloadedProcesses preloaded_;
  std::uint64_t left_to_shim_ = 0;
  std::uint64_t calls_ = 0;
  std::uint64_t tuned_ = 0;
};

}  // namespace tcptune::supervisor
