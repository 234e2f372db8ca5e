#include "call_tuner.hpp"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <optional>

#include "observed_app_settings.hpp"
#include "option_applier.hpp"
#include "owned_fd.hpp"
#include "program_socket.hpp"
#include "socket_probe.hpp"
#include "stripped_exec.hpp"
#include "tcp_info_reader.hpp"
#include "tcptune/config/escape.hpp"
#include "tcptune/config/host_sysctl.hpp"
#include "tcptune/config/rule_matcher.hpp"
#include "trapped_call.hpp"

namespace tcptune::supervisor {

namespace {

// Whether the kernel would take `value` for this option (include/net/tcp.h: MAX_TCP_KEEPIDLE,
// MAX_TCP_KEEPINTVL, MAX_TCP_KEEPCNT): a value it refuses is refused under the rule too.
bool kernel_accepts(int level, int name, int value) {
  if (level != IPPROTO_TCP) {
    return true;
  }
  switch (name) {
    case TCP_KEEPIDLE:
    case TCP_KEEPINTVL: return value >= 1 && value <= 32767;
    case TCP_KEEPCNT: return value >= 1 && value <= 127;
    default: return true;
  }
}

// The option's name when the rule keeps its own value against this call, else nullptr: TCP_NODELAY=0
// and TCP_CORK=1 under nodelay = "force", and the keepalive options the rule sets. Only where the
// rule's value is the one in effect (`nodelay_on()`: TCP_NODELAY is 1; `keepalive_on()`: the
// rule's keepalive is set, each asked only when it decides): on a socket the rule never reached,
// the program's call is made, as without the rule.
template <typename NodelayOn, typename KeepaliveOn>
const char* option_the_rule_keeps(int level, int name, int value, const config::Tuning& tuning,
                                  const NodelayOn& nodelay_on, const KeepaliveOn& keepalive_on) {
  if (level == IPPROTO_TCP && (name == TCP_NODELAY || name == TCP_CORK)) {
    const bool vetoed = name == TCP_NODELAY ? value == 0 : value != 0;
    const bool forced = tuning.nodelay == config::NodelayMode::force && nodelay_on();
    return vetoed && forced ? (name == TCP_NODELAY ? "TCP_NODELAY" : "TCP_CORK") : nullptr;
  }
  if (!tuning.keepalive.has_value()) {
    return nullptr;
  }
  const config::Keepalive& keepalive = *tuning.keepalive;
  const char* option = nullptr;
  if (level == SOL_SOCKET && name == SO_KEEPALIVE) {
    option = "SO_KEEPALIVE";
  } else if (level == IPPROTO_TCP && name == TCP_KEEPIDLE) {
    option = "TCP_KEEPIDLE";
  } else if (level == IPPROTO_TCP && name == TCP_KEEPINTVL && keepalive.interval.count() > 0) {
    option = "TCP_KEEPINTVL";
  } else if (level == IPPROTO_TCP && name == TCP_KEEPCNT && keepalive.count > 0) {
    option = "TCP_KEEPCNT";
  }
  return option != nullptr && keepalive_on() ? option : nullptr;
}

// The same, read from the socket itself.
const char* option_the_rule_keeps(int fd, int level, int name, int value, const config::Tuning& tuning) {
  return option_the_rule_keeps(
      level, name, value, tuning, [fd] { return shim::get_int_option(fd, IPPROTO_TCP, TCP_NODELAY) == 1; },
      [fd, &tuning] { return tuning.keepalive.has_value() && shim::keepalive_in_effect(fd, *tuning.keepalive); });
}

// The option a trapped setsockopt sets when some rule could keep its own value against it (the
// filter traps only options a rule of the policy keeps), else nullptr.
const char* option_a_rule_may_keep(int level, int name, int value) {
  if (level == IPPROTO_TCP && name == TCP_NODELAY) {
    return value == 0 ? "TCP_NODELAY" : nullptr;
  }
  if (level == IPPROTO_TCP && name == TCP_CORK) {
    return value != 0 ? "TCP_CORK" : nullptr;
  }
  if (level == SOL_SOCKET && name == SO_KEEPALIVE) {
    return "SO_KEEPALIVE";
  }
  switch (level == IPPROTO_TCP ? name : -1) {
    case TCP_KEEPIDLE: return "TCP_KEEPIDLE";
    case TCP_KEEPINTVL: return "TCP_KEEPINTVL";
    case TCP_KEEPCNT: return "TCP_KEEPCNT";
    default: return nullptr;
  }
}

// The TCP state of a TCP socket (TCP_CLOSE before connect or listen); nullopt for any other
// descriptor. SO_PROTOCOL tells MPTCP, which answers TCP_INFO too, from TCP.
std::optional<std::uint8_t> tcp_state(int fd) {
  if (shim::get_int_option(fd, SOL_SOCKET, SO_PROTOCOL) != std::optional<int>(IPPROTO_TCP)) {
    return std::nullopt;
  }
  const std::optional<shim::TcpInfoSummary> info = shim::read_tcp_info(fd);
  return info.has_value() ? std::optional<std::uint8_t>(info->state) : std::nullopt;
}

struct AddressInProgram {
  std::uint64_t address = 0;
  std::uint64_t length = 0;
};

// Where a connecting call's address lies in the program: connect(fd, addr, len), sendto(fd, buf,
// n, flags, addr, len), or the msghdr of sendmsg(fd, msg, flags). nullopt: none (a msghdr that
// cannot be read, or no name in it).
std::optional<AddressInProgram> connect_address(const TrappedCall& call) {
  const seccomp_data& data = call.data();
  if (data.nr == SYS_connect) {
    return AddressInProgram{data.args[1], data.args[2]};
  }
  if (data.nr == SYS_sendto) {
    return AddressInProgram{data.args[4], data.args[5]};
  }
  msghdr message{};
  if (!call.read_memory(data.args[1], &message, sizeof message) || message.msg_name == nullptr) {
    return std::nullopt;
  }
  return AddressInProgram{reinterpret_cast<std::uintptr_t>(message.msg_name), message.msg_namelen};
}

}  // namespace

CallTuner::CallTuner(const config::Policy& policy, FollowUpQueue& follow_ups, bool effective_values,
                     const SocketAccess& access)
    : policy_(policy),
      follow_ups_(follow_ups),
      effective_values_(effective_values),
      host_(shim::read_host_buffer_facts()),
      matches_on_program_(std::any_of(policy.rules.begin(), policy.rules.end(),
                                      [](const config::Rule& rule) { return !rule.match.programs.empty(); })),
      hand_over_(access.hand_over),
      traps_setsockopt_(!filter_spec(policy).setsockopt.empty()) {
  host_congestion_ = config::read_sysctl("net/ipv4/tcp_congestion_control").value_or("");
}

FilterSpec CallTuner::filter_spec(const config::Policy& policy, const SocketAccess& access) {
  bool force_nodelay = false;
  bool keepalive = false;
  for (int rule = -1; rule < static_cast<int>(policy.rules.size()); ++rule) {
    const config::Tuning& tuning = config::tuning_for(policy, rule);
    force_nodelay = force_nodelay || tuning.nodelay == config::NodelayMode::force;
    keepalive = keepalive || tuning.keepalive.has_value();
  }
  FilterSpec spec;
  spec.tcp_sockets = access.hand_over;
  spec.namespace_changes = access.hand_over;
  if (force_nodelay) {
    spec.setsockopt.push_back({IPPROTO_TCP, TCP_NODELAY});
    spec.setsockopt.push_back({IPPROTO_TCP, TCP_CORK});
  }
  if (keepalive) {
    spec.setsockopt.push_back({SOL_SOCKET, SO_KEEPALIVE});
    spec.setsockopt.push_back({IPPROTO_TCP, TCP_KEEPIDLE});
    spec.setsockopt.push_back({IPPROTO_TCP, TCP_KEEPINTVL});
    spec.setsockopt.push_back({IPPROTO_TCP, TCP_KEEPCNT});
  }
  return spec;
}

void CallTuner::handle(int listener, const seccomp_notif& request) {
  ++calls_;
  const TrappedCall call(listener, request, threads_);
  try {
    const auto nr = call.data().nr;
    if (PreloadedProcesses::is_announcement(call.data())) {
      preloaded_.take_announcement(call, threads_.process(call.thread()));
      return;
    }
    // A process whose preloaded shim tunes it: its sockets are the shim's (an exec is still
    // looked at, for what no_new_privs strips; unshare and setns for the hand-over's check).
    const bool socket_call = nr == SYS_connect || nr == SYS_listen || nr == SYS_sendto || nr == SYS_sendmsg ||
                             nr == SYS_setsockopt || nr == SYS_socket;
    if (socket_call && !preloaded_.empty() && preloaded_.core_tunes(call, threads_.process(call.thread()))) {
      ++left_to_shim_;
      call.continue_call();
      return;
    }
    if (nr == SYS_connect || nr == SYS_listen || nr == SYS_sendto || nr == SYS_sendmsg) {
      tune_connect_or_listen(call);
    } else if (nr == SYS_setsockopt) {
      keep_policy_over_setsockopt(call);
    } else if (nr == SYS_execve || nr == SYS_execveat) {
      name_stripped_exec(call);
    } else if (nr == SYS_socket && hand_over_) {
      hand_over_socket(call);
    } else if (nr == SYS_unshare || nr == SYS_setns) {
      hand_over_check_.forget(call.thread());  // before the call: its next socket() looks again
      call.continue_call();
    } else {
      call.continue_call();
    }
  } catch (...) {
    call.continue_call();  // out of memory: untuned, never stuck (a second answer is refused)
  }
}

void CallTuner::tune_connect_or_listen(const TrappedCall& call) {
  const seccomp_data& data = call.data();
  // sendto and sendmsg are trapped only with MSG_FASTOPEN: they connect as connect does.
  const bool is_connect = data.nr != SYS_listen;
  const int app_fd = static_cast<int>(data.args[0]);
  // The socket: a duplicate of the program's, or where pidfd_getfd is refused, the reference
  // held since the supervisor created it (found by inode: never another socket at that number).
  OwnedFd duplicate;
  int socket = -1;
  std::uint64_t held_inode = 0;
  if (hand_over_) {
    held_inode = program_socket_inode(call.thread(), app_fd);
    socket = held_.find(held_inode);
    if (socket < 0) {
      if (handed_over_.find(held_inode) == nullptr && program_fd_is_tcp(call.thread(), app_fd) &&
          call.still_pending()) {
        push_untuned(call, FollowUp::Call::not_handed_over, is_connect ? "connect" : "listen");
      }
      call.continue_call();  // tuned at its first connect or listen already, or never handed over
      return;
    }
  } else {
    duplicate = OwnedFd(call.duplicate_fd(app_fd));
    socket = duplicate.get();
    if (socket < 0) {
      if (errno == EPERM || errno == EMFILE || errno == ENFILE) {
        push_untuned(call, errno == EPERM ? FollowUp::Call::not_inspectable : FollowUp::Call::out_of_descriptors, {});
      }
      call.continue_call();
      return;
    }
  }
  // Only a TCP socket before its first connect or listen: a second connect (EINPROGRESS
  // polled again) or a listen to change the backlog is the same connection.
  if (tcp_state(socket) != std::optional<std::uint8_t>(TCP_CLOSE)) {
    held_.release(held_inode);  // connected by a call the filter does not see: nothing left to tune
    call.continue_call();
    return;
  }
  // A client's rule does not depend on its local endpoint (read after the answer, for the
  // record); a listener's does, by its port.
  config::Endpoint local;
  int family = 0;
  config::ConnectionFacts facts;
  if (is_connect) {
    sockaddr_storage address{};
    const std::optional<AddressInProgram> where = connect_address(call);
    const auto length = where.has_value() ? std::min<std::uint64_t>(where->length, sizeof address) : 0;
    if (length == 0 || !call.read_memory(where->address, &address, length)) {
      call.continue_call();  // the kernel answers EFAULT, or (no address) sends on a connected socket
      return;
    }
    facts.role = config::Role::client;
    facts.peer =
        config::endpoint_from_sockaddr(reinterpret_cast<const sockaddr*>(&address), static_cast<socklen_t>(length));
    if (facts.peer.family == 0) {
      call.continue_call();  // AF_UNSPEC: a disconnect
      return;
    }
    family = address.ss_family;
  } else {
    local = shim::local_endpoint(socket, family);
    facts.local_port = local.port;
    facts.role = config::Role::server;
    listening_ports_.insert(facts.local_port);
  }
  // What was read belongs to this call only if it is still waiting: a pid reused by another
  // process after the thread died would otherwise be tuned by its predecessor's facts.
  if (!call.still_pending()) {
    return;
  }
  const std::string program = program_of(call.thread());
  facts.program = program;
  const int rule = config::match_rule(policy_, facts, !is_connect);
  const config::Tuning& tuning = config::tuning_for(policy_, rule);
  const shim::ApplyPhase phase = is_connect ? shim::ApplyPhase::before_connect : shim::ApplyPhase::before_listen;
  FollowUp follow_up = follow_up_of(call, is_connect ? FollowUp::Call::connect : FollowUp::Call::listen, rule, program);
  follow_up.outcome = shim::apply_options(
      socket,
      observe_app_settings(socket, tuning, is_connect ? facts.peer.family : local.family, host_, host_congestion_),
      tuning, phase, host_);
  // A listener's endpoint; a client has none before its connect: its conn_open waits for a dump
  // that shows both ends, or for its TIME_WAIT, found by the cookie read now (SO_COOKIE: the
  // kernel gives the socket its cookie then, and the TIME_WAIT entry keeps it).
  follow_up.local = local;
  follow_up.family = family;
  if (is_connect) {
    follow_up.peer = facts.peer;
    std::uint64_t cookie = 0;
    socklen_t cookie_length = sizeof cookie;
    if (getsockopt(socket, SOL_SOCKET, SO_COOKIE, &cookie, &cookie_length) == 0) {
      follow_up.cookie = cookie;
    }
  }
  follow_up.inode = held_inode;  // the held socket's, known; a duplicate's is read
  read_socket(socket, follow_up, effective_values_);
  if (hand_over_) {
    // Known from now on, for a second connect (a nonblocking one polled) and the vetoes; what is in
    // effect is read only where the filter traps setsockopt.
    HandedOverTuning tuned{rule, !is_connect, false, false, threads_.process(call.thread()), app_fd};
    if (traps_setsockopt_) {
      tuned.nodelay_on = shim::get_int_option(socket, IPPROTO_TCP, TCP_NODELAY) == std::optional<int>(1);
      tuned.keepalive_on = tuning.keepalive.has_value() && shim::keepalive_in_effect(socket, *tuning.keepalive);
    }
    handed_over_.add(held_inode, tuned);
  }
  // Closed before the answer (see read_socket), the held reference as the duplicate: the
  // program's own descriptor keeps the socket.
  duplicate = OwnedFd();
  held_.release(held_inode);
  call.continue_call();
  ++tuned_;
  (void)follow_ups_.push(std::move(follow_up));  // dropped beyond its bound: counted there
}

void CallTuner::push_untuned(const TrappedCall& call, FollowUp::Call kind, std::string note, std::string key) {
  FollowUp untuned;
  untuned.call = kind;
  untuned.thread = call.thread();
  untuned.process = threads_.process(call.thread());
  untuned.program = threads_.program(call.thread());
  untuned.app_fd = static_cast<int>(call.data().args[0]);
  untuned.note = std::move(note);
  untuned.key = std::move(key);
  (void)follow_ups_.push(std::move(untuned));
}

void CallTuner::hand_over_socket(const TrappedCall& call) {
  const seccomp_data& data = call.data();
  const auto family = static_cast<int>(data.args[0]);
  const auto type = static_cast<int>(data.args[1]);
  const auto protocol = static_cast<int>(data.args[2]);
  // Before the socket exists: a port the program bound and closed is free for its bind.
  held_.sweep_bound();
  if (add_fd_unsupported_) {
    call.continue_call();
    return;
  }
  std::string key;
  std::string obstacle = hand_over_check_.obstacle(call.thread(), threads_.pidfd(call.thread()), key);
  if (key == "thread_gone") {  // the kept pidfd named a thread that died; this one has its id
    threads_.forget(call.thread());
    key.clear();
    obstacle = hand_over_check_.obstacle(call.thread(), threads_.pidfd(call.thread()), key);
    if (key == "thread_gone") {
      call.continue_call();  // gone again: the call went with it
      return;
    }
  }
  if (obstacle.empty() && held_.size() >= HeldSockets::kMostHeld) {
    held_.sweep();
    if (held_.size() >= HeldSockets::kMostHeld) {
      key = "limit";
      obstacle = "more than " + std::to_string(HeldSockets::kMostHeld) +
                 " of its TCP sockets wait for their connect or listen at once";
    }
  }
  if (!obstacle.empty()) {
    if (call.still_pending()) {
      push_untuned(call, FollowUp::Call::hand_over_refused, std::move(obstacle), std::move(key));
    }
    call.continue_call();
    return;
  }
  // The program's own arguments; close-on-exec here is this process's table only (the program
  // gets O_CLOEXEC as it asked, below), SOCK_NONBLOCK is the socket's and goes with it.
  OwnedFd socket(::socket(family, type | SOCK_CLOEXEC, protocol));
  if (socket.get() < 0) {
    // The kernel makes the program's call itself and answers it as without tcptune; this
    // process's own descriptor limit leaves that socket untuned, and says so.
    if (errno == EMFILE || errno == ENFILE) {
      push_untuned(call, FollowUp::Call::out_of_descriptors, {});
    }
    call.continue_call();
    return;
  }
  struct stat status {};
  const std::uint64_t inode = fstat(socket.get(), &status) == 0 ? status.st_ino : 0;
  const int installed = call.hand_over(socket.get(), (type & SOCK_CLOEXEC) != 0);
  if (installed >= 0) {
    held_.add(std::move(socket), inode, call.thread(), threads_.process(call.thread()), installed);
    return;
  }
  if (errno == ENOENT) {
    return;  // the call is gone (the thread was killed): nothing to answer
  }
  if (errno == EINVAL || errno == ENOTTY) {
    add_fd_unsupported_ = true;
    push_untuned(call, FollowUp::Call::hand_over_refused,
                 "this kernel cannot hand a descriptor over as a call's answer (SECCOMP_ADDFD_FLAG_SEND, Linux 5.14)",
                 "kernel");
  }
  // EMFILE: the program's own descriptor limit. The kernel then makes its call itself and
  // answers it as without tcptune (EMFILE, unless a descriptor was freed since).
  call.continue_call();
}

std::string CallTuner::program_of(pid_t thread) {
  return matches_on_program_ ? threads_.program(thread) : threads_.program_once(thread);
}

FollowUp CallTuner::follow_up_of(const TrappedCall& call, FollowUp::Call kind, int rule, const std::string& program) {
  FollowUp follow_up;
  follow_up.call = kind;
  follow_up.thread = call.thread();
  follow_up.process = threads_.process(call.thread());
  follow_up.app_fd = static_cast<int>(call.data().args[0]);
  follow_up.rule = rule;
  follow_up.program = program;
  return follow_up;
}

void CallTuner::keep_policy_over_setsockopt(const TrappedCall& call) {
  const seccomp_data& data = call.data();
  const int level = static_cast<int>(data.args[1]);
  const int name = static_cast<int>(data.args[2]);
  int value = 0;
  // optlen is an int to the kernel (a negative one is EINVAL); the register's upper half is not
  // the program's.
  const auto length = static_cast<std::int32_t>(static_cast<std::uint32_t>(data.args[4]));
  if (length < static_cast<std::int32_t>(sizeof value) || !call.read_memory(data.args[3], &value, sizeof value)) {
    call.continue_call();  // the kernel answers EINVAL or EFAULT
    return;
  }
  if (!kernel_accepts(level, name, value)) {
    call.continue_call();  // the kernel answers EINVAL, as it would without the rule
    return;
  }
  const int app_fd = static_cast<int>(data.args[0]);
  OwnedFd duplicate;
  int socket = -1;
  if (hand_over_) {
    // Held (not yet connected or listening), tuned already (judged from what was set then), or a
    // socket the supervisor never had (an accepted one): made as asked, with a warning where a
    // rule might have kept its value.
    const std::uint64_t inode = program_socket_inode(call.thread(), app_fd);
    socket = held_.find(inode);
    if (socket < 0) {
      if (const HandedOverTuning* tuned = handed_over_.find(inode); tuned != nullptr) {
        keep_policy_from_hand_over(call, *tuned, level, name, value);
        return;
      }
      if (!program_fd_is_tcp(call.thread(), app_fd) || !call.still_pending()) {
        call.continue_call();
        return;
      }
      // Named before the answer, as the call found the thread.
      FollowUp seen = follow_up_of(call, FollowUp::Call::seen_by_inode, -1, program_of(call.thread()));
      seen.inode = inode;
      const char* option = option_a_rule_may_keep(level, name, value);
      if (option != nullptr) {
        push_untuned(call, FollowUp::Call::unreachable_setsockopt, option);
      }
      call.continue_call();
      (void)follow_ups_.push(std::move(seen));
      return;
    }
  } else {
    duplicate = OwnedFd(call.duplicate_fd(app_fd));
    socket = duplicate.get();
  }
  // Before connect or listen the program's own settings stand, as in the shim: the rule,
  // chosen then, leaves what the program set alone unless it forces it.
  const std::optional<std::uint8_t> state = socket < 0 ? std::nullopt : tcp_state(socket);
  if (!state.has_value() || *state == TCP_CLOSE) {
    call.continue_call();
    return;
  }
  config::ConnectionFacts facts;
  facts.local_port = shim::local_endpoint(socket).port;
  const bool is_listener = *state == TCP_LISTEN;
  if (!is_listener) {
    facts.peer = shim::peer_endpoint(socket);
    facts.role = listening_ports_.contains(facts.local_port) ? config::Role::server : config::Role::client;
  } else {
    facts.role = config::Role::server;
  }
  if (!call.still_pending()) {
    return;
  }
  const std::string program = program_of(call.thread());
  facts.program = program;
  const int rule = config::match_rule(policy_, facts, is_listener);
  const config::Tuning& tuning = config::tuning_for(policy_, rule);
  const char* option = option_the_rule_keeps(socket, level, name, value, tuning);
  const bool accepted = facts.role == config::Role::server && !is_listener;
  FollowUp follow_up = follow_up_of(call, FollowUp::Call::setsockopt, rule, program);
  follow_up.accepted = accepted;
  follow_up.kept_option = option;
  follow_up.app_value = value;
  if (accepted) {
    follow_up.local = shim::local_endpoint(socket, follow_up.family);
    follow_up.peer = facts.peer;
    read_socket(socket, follow_up, false);
  }
  duplicate = OwnedFd();  // before the answer: see read_socket
  if (option == nullptr) {
    call.continue_call();
  } else {
    call.complete_call(0, 0);  // success, unmade: the policy's value stays
  }
  if (option != nullptr || accepted) {
    (void)follow_ups_.push(std::move(follow_up));  // dropped beyond its bound: counted there
  }
}

void CallTuner::keep_policy_from_hand_over(const TrappedCall& call, const HandedOverTuning& tuned, int level, int name,
                                           int value) {
  const config::Tuning& tuning = config::tuning_for(policy_, tuned.rule);
  const char* option = option_the_rule_keeps(
      level, name, value, tuning, [&tuned] { return tuned.nodelay_on; }, [&tuned] { return tuned.keepalive_on; });
  if (option == nullptr || !call.still_pending()) {
    call.continue_call();
    return;
  }
  FollowUp follow_up = follow_up_of(call, FollowUp::Call::setsockopt, tuned.rule, program_of(call.thread()));
  follow_up.kept_option = option;
  follow_up.app_value = value;
  call.complete_call(0, 0);  // success, unmade: the policy's value stays
  (void)follow_ups_.push(std::move(follow_up));
}

void CallTuner::name_stripped_exec(const TrappedCall& call) {
  std::optional<StrippedExec> stripped = stripped_exec(call);
  // Looked at before the answer: the thread still runs the program that makes the call.
  if (!stripped.has_value() || !call.still_pending()) {
    call.continue_call();
    return;
  }
  FollowUp follow_up;
  follow_up.call = FollowUp::Call::privileges_stripped;
  follow_up.thread = call.thread();
  follow_up.process = threads_.process(call.thread());
  follow_up.program = threads_.program(call.thread());
  call.continue_call();
  // The path is the program's bytes: escaped, so the line stays one line.
  follow_up.note = config::escape_for_display(stripped->path, false) + " " + stripped->gains;
  (void)follow_ups_.push(std::move(follow_up));
}

}  // namespace tcptune::supervisor
