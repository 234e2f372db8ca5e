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
// rule's value is the one in effect: on a socket the rule never reached, the program's call is
// made, as without the rule.
const char* option_the_rule_keeps(int fd, int level, int name, int value, const config::Tuning& tuning) {
  if (level == IPPROTO_TCP && (name == TCP_NODELAY || name == TCP_CORK)) {
    const bool vetoed = name == TCP_NODELAY ? value == 0 : value != 0;
    const bool forced =
        tuning.nodelay == config::NodelayMode::force && shim::get_int_option(fd, IPPROTO_TCP, TCP_NODELAY) == 1;
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
  return option != nullptr && shim::keepalive_in_effect(fd, keepalive) ? option : nullptr;
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

CallTuner::CallTuner(const config::Policy& policy, FollowUpQueue& follow_ups, bool effective_values)
    : policy_(policy),
      follow_ups_(follow_ups),
      effective_values_(effective_values),
      host_(shim::read_host_buffer_facts()),
      matches_on_program_(std::any_of(policy.rules.begin(), policy.rules.end(),
                                      [](const config::Rule& rule) { return !rule.match.programs.empty(); })) {
  host_congestion_ = config::read_sysctl("net/ipv4/tcp_congestion_control").value_or("");
}

FilterSpec CallTuner::filter_spec(const config::Policy& policy) {
  bool force_nodelay = false;
  bool keepalive = false;
  for (int rule = -1; rule < static_cast<int>(policy.rules.size()); ++rule) {
    const config::Tuning& tuning = config::tuning_for(policy, rule);
    force_nodelay = force_nodelay || tuning.nodelay == config::NodelayMode::force;
    keepalive = keepalive || tuning.keepalive.has_value();
  }
  FilterSpec spec;
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
    if (nr == SYS_connect || nr == SYS_listen || nr == SYS_sendto || nr == SYS_sendmsg) {
      tune_connect_or_listen(call);
    } else if (nr == SYS_setsockopt) {
      keep_policy_over_setsockopt(call);
    } else if (nr == SYS_execve || nr == SYS_execveat) {
      name_stripped_exec(call);
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
  OwnedFd socket(call.duplicate_fd(app_fd));
  if (socket.get() < 0) {
    if (errno == EPERM || errno == EMFILE || errno == ENFILE) {
      FollowUp refused;
      refused.call = errno == EPERM ? FollowUp::Call::not_inspectable : FollowUp::Call::out_of_descriptors;
      refused.thread = call.thread();
      refused.process = threads_.process(call.thread());
      refused.program = threads_.program(call.thread());
      (void)follow_ups_.push(std::move(refused));
    }
    call.continue_call();
    return;
  }
  // Only a TCP socket before its first connect or listen: a second connect (EINPROGRESS
  // polled again) or a listen to change the backlog is the same connection.
  if (tcp_state(socket.get()) != std::optional<std::uint8_t>(TCP_CLOSE)) {
    call.continue_call();
    return;
  }
  // A client's rule does not depend on its local endpoint (read after the answer, for the
  // record); a listener's does, by its port.
  config::Endpoint local;
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
  } else {
    local = shim::local_endpoint(socket.get());
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
  follow_up.outcome =
      shim::apply_options(socket.get(),
                          observe_app_settings(socket.get(), tuning, is_connect ? facts.peer.family : local.family,
                                               host_, host_congestion_),
                          tuning, phase, host_);
  // A listener's endpoint; a client has none worth a system call before its connect (the
  // conn_close record has both ends).
  follow_up.local = local;
  read_socket(socket.get(), follow_up, effective_values_);
  socket = OwnedFd();  // before the answer: see read_socket
  call.continue_call();
  ++tuned_;
  (void)follow_ups_.push(std::move(follow_up));  // dropped beyond its bound: counted there
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
  OwnedFd socket(call.duplicate_fd(app_fd));
  // Before connect or listen the program's own settings stand, as in the shim: the rule,
  // chosen then, leaves what the program set alone unless it forces it.
  const std::optional<std::uint8_t> state = socket.get() < 0 ? std::nullopt : tcp_state(socket.get());
  if (!state.has_value() || *state == TCP_CLOSE) {
    call.continue_call();
    return;
  }
  config::ConnectionFacts facts;
  facts.local_port = shim::local_endpoint(socket.get()).port;
  const bool is_listener = *state == TCP_LISTEN;
  if (!is_listener) {
    facts.peer = shim::peer_endpoint(socket.get());
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
  const char* option = option_the_rule_keeps(socket.get(), level, name, value, tuning);
  const bool accepted = facts.role == config::Role::server && !is_listener;
  FollowUp follow_up = follow_up_of(call, FollowUp::Call::setsockopt, rule, program);
  follow_up.accepted = accepted;
  follow_up.kept_option = option;
  follow_up.app_value = value;
  if (accepted) {
    read_socket(socket.get(), follow_up, false);
  }
  socket = OwnedFd();  // before the answer: see read_socket
  if (option == nullptr) {
    call.continue_call();
  } else {
    call.complete_call(0, 0);  // success, unmade: the policy's value stays
  }
  if (option != nullptr || accepted) {
    (void)follow_ups_.push(std::move(follow_up));  // dropped beyond its bound: counted there
  }
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
