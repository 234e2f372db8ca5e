#include "socket_events.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <linux/close_range.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>

#include "app_memory.hpp"
#include "callsite.hpp"
#include "connection_names.hpp"
#include "connection_record.hpp"
#include "errno_saver.hpp"
#include "idle_restart.hpp"
#include "keep_warm.hpp"
#include "next_symbols.hpp"
#include "option_applier.hpp"
#include "option_misses.hpp"
#include "pending_open.hpp"
#include "process_runtime.hpp"
#include "shim_log.hpp"
#include "signal_context.hpp"
#include "socket_probe.hpp"
#include "tcptune/config/rule_matcher.hpp"
#include "telemetry_worker.hpp"

namespace tcptune::shim {

namespace {

using config::LogLevel;

// A refused option is worth a warning once per rule and option, not once per connection.
void warn_refusals_once(const config::Policy& policy, int rule, const ApplyReport& report) {
  for (const OptionReport& option : report.options) {
    if (!option.refused()) {
      continue;
    }
    // Not a mutex of our own: the fork handlers do not take it, so a child forked while another
    // thread held it would deadlock on its first warning.
    if (!log_first_time(std::string(config::rule_name(policy, rule)) + "/" + option.name)) {
      continue;
    }
    log_message(LogLevel::warn, "rule=\"" + std::string(config::rule_name(policy, rule)) + "\" " + option.name + ": " +
                                    option.note + " (logged once per rule)");
  }
}

// conn_rtt_auto: the options sized once the connection is established.
void log_connection(const char* event, int fd, const SocketSlot& slot, const config::Policy& policy, int rule,
                    ApplyPhase phase, const ApplyReport& report) {
  warn_refusals_once(policy, rule, report);
  count_option_misses(rule, report);
  if (!log_enabled(LogLevel::info)) {
    return;
  }
  telemetry::Record record =
      connection_record(event, fd, fd, slot.role.load(std::memory_order_relaxed), policy, rule, phase);
  add_options(record, report);
  log_record(LogLevel::info, record);
}

// What the caller already knows of a socket being set up, so that it is not asked of the
// kernel again: its ends (an accepted socket's peer came with accept(), its local end is the
// listener's unless that listens on every address), and whether TCP_NODELAY is off.
struct KnownState {
  config::Endpoint local;
  config::Endpoint peer;
  bool local_known = false;
  bool peer_known = false;
  bool nodelay_off = false;
};

// conn_open: written with both ends (an accepted, adopted or listening socket: by the worker
// once it runs, which formats it off the app's thread), or, for a client before its connect,
// parked until the connect completes (pending_open.hpp); its endpoints are kept for its later
// records either way. True when the worker (or whoever completes a parked one) has it.
bool open_connection(int fd, SocketSlot& slot, const config::Policy& policy, int rule, ApplyPhase phase,
                     ApplyReport&& report, const CallSite& site, const config::Endpoint& connect_peer,
                     const KnownState& known) {
  const SocketRole role = slot.role.load(std::memory_order_relaxed);
  const std::uint32_t generation = slot.generation.load(std::memory_order_acquire);
  if (phase == ApplyPhase::before_connect) {
    // Parked only where something will write it: the worker runs (it polls a connect still
    // under way when connect() returns, and writes what the close or the exit hands it).
    if (telemetry_running()) {
      PendingOpen contents{fd, generation, rule, role, phase, connect_peer, site};
      keep_report(contents, std::move(report));
      PendingOpen* open = new_pending_open(contents);
      if (park_pending_open(slot, open)) {
        return true;
      }
      const OwnedPendingOpen owned(open, &free_pending_open);
      log_record(LogLevel::info, conn_open_record(fd, role, policy, rule, phase, local_endpoint(fd), connect_peer, site,
                                                  open->options()));
      return false;
    }
    log_record(LogLevel::info,
               conn_open_record(fd, role, policy, rule, phase, local_endpoint(fd), connect_peer, site, report));
    return false;
  }
  const config::Endpoint local = known.local_known ? known.local : local_endpoint(fd);
  const config::Endpoint peer = role == SocketRole::listener ? config::Endpoint{}
                                : known.peer_known           ? known.peer
                                                             : peer_endpoint(fd);
  if (peer.family != 0) {
    if (ConnectionNames* names = names_for(slot)) {
      names->store(generation, local, peer);
    }
  }
  if (telemetry_running()) {
    PendingOpen open{fd, generation, rule, role, phase, connect_peer, site};
    keep_report(open, std::move(report));
    if (post_conn_open(open, local, peer)) {
      return true;  // with its report
    }
    log_record(LogLevel::info, conn_open_record(fd, role, policy, rule, phase, local, peer, site, open.options()));
    release_report(open);
    return false;
  }
  log_record(LogLevel::info, conn_open_record(fd, role, policy, rule, phase, local, peer, site, report));
  return false;
}

// A listener's own address, kept beside its slot (as a connection's ends are): an accepted
// socket's local end is that address, and its local port always that port.
void note_listener_address(SocketSlot& slot, const config::Endpoint& local) {
  if (local.port == 0) {
    return;  // listen() without bind() picks its port then: asked of each accepted socket instead
  }
  if (ConnectionNames* names = names_for(slot)) {
    names->store(slot.generation.load(std::memory_order_acquire), local, config::Endpoint{});
  }
}

bool listener_address(const SocketSlot& listener, config::Endpoint& local) {
  config::Endpoint none;
  const ConnectionNames* names = names_if_any(listener);
  return names != nullptr && names->load(listener.generation.load(std::memory_order_acquire), local, none) &&
         local.family != 0 && local.port != 0;
}

// Connections (not listeners) are measured for their conn_close record.
void start_measuring(SocketSlot& slot, bool is_listener) {
  if (is_listener) {
    return;
  }
  slot.stats.reset(monotonic_ns());
  slot.set_flag(flag_measured);
  ensure_telemetry_worker();
}

// Whether the kernel may restart a measured connection's window after idle (not under BBR) is
// found out off the app's thread, long before a write can follow an idle period: by the worker
// as it writes the conn_open, when it has it (`conn_open_handed_over`), else as it is told to,
// else, should it not take that, here.
void find_out_idle_restart(int fd, const SocketSlot& slot, bool conn_open_handed_over) {
  if (conn_open_handed_over || !slot.has_flag(flag_measured) || !namespace_restarts_after_idle()) {
    return;
  }
  const std::uint32_t generation = slot.generation.load(std::memory_order_acquire);
  if (!post_idle_restart_check(fd, generation)) {
    note_idle_restart_possible(fd, generation);
  }
}

// A connection's descriptor is about to be closed (or replaced by dup2): no heartbeat from now
// on (one in progress finishes first, so the summary counts it), then a measured connection's
// summary goes to the worker, before its slot is retired. The generation moves on first, so a
// write still running on another thread counts as after the close, not into a taken snapshot.
void end_connection(int fd, SocketSlot& slot) noexcept {
  slot.keep_warm_gate.stop_heartbeats();
  if (slot.has_flag(flag_measured)) {
    const std::uint32_t generation = slot.generation.fetch_add(1, std::memory_order_acq_rel);
    post_closed_connection(fd, slot, generation);
  }
}

void end_connection_if_tcp(int fd) noexcept {
  if (SocketSlot* slot = fd_table().find(fd); slot != nullptr && slot->is_tcp()) {
    end_connection(fd, *slot);
  }
}

// The tuning core on a tracked socket: what the app set comes from the slot (the held buffers
// are taken: applied or dropped now), and what the hooks must enforce from now on goes back.
// The options are read back (effective) only for the log's records.
ApplyReport apply_to_slot(int fd, SocketSlot& slot, const config::Tuning& tuning, ApplyPhase phase,
                          bool nodelay_known_off) {
  AppSettings app;
  app.app_options = slot.app_options.load(std::memory_order_relaxed);
  app.held_sndbuf = slot.held_sndbuf.exchange(kNoHeldBuffer, std::memory_order_relaxed);
  app.held_rcvbuf = slot.held_rcvbuf.exchange(kNoHeldBuffer, std::memory_order_relaxed);
  app.nodelay_known_off = nodelay_known_off;
  TuningOutcome outcome = log_enabled(LogLevel::info) ? apply_tuning(fd, app, tuning, phase, host_buffer_facts())
                                                      : apply_options(fd, app, tuning, phase, host_buffer_facts());
  for (const auto& [wanted, flag] :
       {std::pair{outcome.veto_nodelay_off, flag_nodelay_forced}, std::pair{outcome.push_on_wait, flag_push_on_wait},
        std::pair{outcome.veto_app_buffers, flag_override_buffers}, std::pair{outcome.rearm_quickack, flag_quickack},
        std::pair{outcome.size_sndbuf_from_rtt, flag_rtt_auto_pending}}) {
    if (wanted) {
      slot.set_flag(flag);
    }
  }
  return std::move(outcome.report);
}

// A vfork() child runs in its parent's memory until it execs: the slots are the parent's, and
// the child's closes and dups of its own descriptor table must not change them. What matters is
// the program it will exec: the sockets that program inherits (no FD_CLOEXEC) stop being kept
// warm in the parent, once per child. True in such a child (checked only for TCP descriptors,
// since it costs a getpid).
bool in_vfork_child() noexcept {
  if (!in_child_sharing_memory()) {
    return false;
  }
  static std::atomic<pid_t> handled{0};
  const pid_t self = getpid();
  if (handled.exchange(self, std::memory_order_relaxed) != self) {
    keep_warm_before_exec_in_child();
  }
  return true;
}

// Before a close or dup onto `fd`: true in a vfork child, whose closes must leave its parent's
// state alone. Asked (a getpid) only where it matters: for a TCP descriptor, and for any once
// keep-warm has run, since a child that closes only its other descriptors still inherits the
// parent's kept-warm sockets it does not close.
bool closing_in_vfork_child(int fd) noexcept {
  const SocketSlot* slot = fd_table().find(fd);
  return ((slot != nullptr && slot->is_tcp()) || keep_warm_started()) && in_vfork_child();
}

// Picks the rule for `facts`, records it in the slot, applies it and logs what happened (a
// client's conn_open once its connect completes).
void choose_and_apply(int fd, SocketSlot& slot, const Runtime& runtime, config::ConnectionFacts facts, SocketRole role,
                      ApplyPhase phase, const KnownState& known = {}) {
  facts.program = runtime.program;
  const bool is_listener = role == SocketRole::listener;
  const int rule = config::match_rule(*runtime.policy, facts, is_listener);
  static_assert(config::kMaxRules - 1 <= INT16_MAX, "the loader's rule limit must fit SocketSlot::rule_index");
  slot.rule_index.store(static_cast<std::int16_t>(rule), std::memory_order_relaxed);
  slot.role.store(role, std::memory_order_relaxed);
  const config::Tuning& tuning = config::tuning_for(*runtime.policy, rule);
  // A socket made through the hooks, whose app did not set TCP_NODELAY, has the kernel's default.
  const std::uint16_t app_options = slot.app_options.load(std::memory_order_relaxed);
  const bool nodelay_off =
      known.nodelay_off || (phase == ApplyPhase::before_connect && (app_options & options_seen_since_creation) != 0 &&
                            (app_options & app_nodelay) == 0);
  ApplyReport report = apply_to_slot(fd, slot, tuning, phase, nodelay_off);
  if (is_listener && known.local_known) {
    note_listener_address(slot, known.local);
  }
  if (std::optional<OptionReport> keep_warm = start_keep_warm(fd, slot, tuning, role, phase)) {
    report.options.push_back(std::move(*keep_warm));
  }
  // The app's stack is still below us: where this connection was opened (or accepted).
  CallSite site;
  if (tuning.callsite.value_or(runtime.policy->log.callsite) && load_unwinder()) {
    slot.set_flag(flag_callsite);
    capture_callsite(site);
  }
  warn_refusals_once(*runtime.policy, rule, report);
  count_option_misses(rule, report);
  // Records when there is a log for them: a connection set up once exit() has begun writing the
  // last records gets none (they would come after the summary, if at all). A client's conn_open
  // is parked for the worker, which must run first; another's written before it starts, so that a
  // process's first one goes straight to the log. Measured only then: the exit's last records,
  // should they be under way, summarize no connection whose conn_open is nowhere yet.
  bool handed_over = false;
  if (log_enabled(LogLevel::info) && !exit_records_begun()) {
    if (phase == ApplyPhase::before_connect) {
      ensure_telemetry_worker();
    }
    handed_over = open_connection(fd, slot, *runtime.policy, rule, phase, std::move(report), site, facts.peer, known);
    start_measuring(slot, is_listener);
  }
  find_out_idle_restart(fd, slot, handed_over);
}

// A socket we find already listening or connected: inherited (found at start-up), or created
// by raw system calls.
void adopt_if_established(int fd, SocketSlot& slot, const Runtime& runtime, bool inherited) {
  if (slot.rule_index.load(std::memory_order_relaxed) != kRuleUnchosen) {
    return;
  }
  config::ConnectionFacts facts;
  KnownState known;
  known.local = local_endpoint(fd);
  known.local_known = true;
  facts.local_port = known.local.port;
  if (is_listening(fd)) {
    facts.role = config::Role::server;
    choose_and_apply(fd, slot, runtime, facts, SocketRole::listener, ApplyPhase::adopted_listener, known);
  } else if (is_connected(fd)) {
    facts.peer = peer_endpoint(fd);  // role unknown: only rules without `role` match
    const bool shared = inherited || slot.has_flag(flag_received);
    choose_and_apply(fd, slot, runtime, facts, SocketRole::unknown,
                     shared ? ApplyPhase::inherited_connected : ApplyPhase::adopted_connected);
  }
}

// The slot of a TCP socket for the setup hooks; a never-seen fd is classified (as on the
// write path) and, if already connected or listening, adopted.
SocketSlot* tcp_slot_for_setup(int fd, const Runtime& runtime, bool inherited = false) {
  if (SocketSlot* slot = fd_table().find(fd)) {
    const FdKind kind = slot->kind.load(std::memory_order_acquire);
    if (kind != FdKind::unknown) {
      return kind == FdKind::tcp ? slot : nullptr;
    }
  }
  SocketSlot* slot = classify_for_io(fd);
  if (slot != nullptr) {
    adopt_if_established(fd, *slot, runtime, inherited);
  }
  return slot;
}

bool rule_chosen(const SocketSlot& slot) {
  return slot.rule_index.load(std::memory_order_relaxed) != kRuleUnchosen;
}

void resolve_rtt_auto(int fd, SocketSlot& slot, const Runtime& runtime) {
  const int rule = slot.rule_index.load(std::memory_order_relaxed);
  const ApplyReport report =
      apply_measured_rtt_sndbuf(fd, config::tuning_for(*runtime.policy, rule), host_buffer_facts());
  if (!report.options.empty()) {
    slot.clear_flag(flag_rtt_auto_pending);
    log_connection("conn_rtt_auto", fd, slot, *runtime.policy, rule, ApplyPhase::adopted_connected, report);
  }
}

// The app's int option value, read the way the kernel would: too short or unreadable is no
// value (the real call then gives the app the kernel's answer, EINVAL or EFAULT).
std::optional<int> int_value(const void* value, socklen_t len) {
  if (len < static_cast<socklen_t>(sizeof(int))) {
    return std::nullopt;
  }
  return read_app_object<int>(value);
}

// The peer address the app passed to connect() or sendto(), copied without trusting it.
config::Endpoint app_endpoint(const sockaddr* addr, socklen_t len) {
  sockaddr_storage copy{};
  if (len <= 0 || addr == nullptr) {
    return {};
  }
  const auto size = std::min<std::size_t>(static_cast<std::size_t>(len), sizeof copy);
  if (!read_app_memory(&copy, addr, size)) {
    return {};  // the kernel will answer EFAULT
  }
  return config::endpoint_from_sockaddr(reinterpret_cast<const sockaddr*>(&copy), static_cast<socklen_t>(size));
}

AppOption app_option_for(int level, int name) {
  if (level == IPPROTO_TCP) {
    switch (name) {
      case TCP_NODELAY: return app_nodelay;
      case TCP_KEEPIDLE:
      case TCP_KEEPINTVL:
      case TCP_KEEPCNT: return app_keepalive;
      case TCP_CONGESTION: return app_congestion;
      case TCP_USER_TIMEOUT: return app_user_timeout;
      case TCP_NOTSENT_LOWAT: return app_notsent_lowat;
      case TCP_THIN_LINEAR_TIMEOUTS: return app_thin_linear;
      default: return AppOption{};
    }
  }
  if (level == SOL_SOCKET && name == SO_KEEPALIVE) {
    return app_keepalive;
  }
  if (level == SOL_SOCKET && (name == SO_RCVBUF || name == SO_RCVBUFFORCE)) {
    return app_rcvbuf;
  }
  if (level == SOL_SOCKET && (name == SO_SNDBUF || name == SO_SNDBUFFORCE)) {
    return app_sndbuf;
  }
  if ((level == IPPROTO_IP && name == IP_TOS) || (level == IPPROTO_IPV6 && name == IPV6_TCLASS)) {
    return app_tos;
  }
  return AppOption{};
}

void log_veto(int fd, SocketSlot& slot, SlotFlag logged_flag, const std::string& what) {
  if (slot.set_flag_first_time(logged_flag)) {
    log_message(LogLevel::info, "veto fd=" + std::to_string(fd) + " " + what + " (logged once per connection)");
  }
}

// A connect still under way once the call that started it returned: the worker looks at it
// until it is established, so that its conn_open is written while it is open.
void look_at_connect_later(int fd, const SocketSlot& slot) noexcept {
  if (const ConnectionNames* names = names_if_any(slot);
      names != nullptr && names->pending.load(std::memory_order_acquire) != nullptr) {
    post_pending_open(fd, slot.generation.load(std::memory_order_acquire));
  }
}

// Runs `apply` for a TCP socket whose rule is not chosen yet. Never throws: an allocation
// failure while logging leaves the app's call to go ahead untouched. Not from inside a signal
// handler, where choosing and logging a rule is not safe: the socket stays untuned, counted.
template <typename Apply>
void for_unchosen_tcp_socket(int fd, Apply apply) noexcept {
  const ErrnoSaver saver;
  const Runtime* runtime = active_runtime();
  if (runtime == nullptr) {
    return;
  }
  if (in_signal_handler()) {
    count_untuned_in_signal_handler();
    return;
  }
  try {
    SocketSlot* slot = tcp_slot_for_setup(fd, *runtime);
    if (slot != nullptr && !rule_chosen(*slot)) {
      apply(*slot, *runtime);
    }
  } catch (...) {
  }
}

}  // namespace

void on_socket_created(int fd, int domain, int type, int protocol) noexcept {
  if (fd < 0 || active_runtime() == nullptr) {
    return;
  }
  const int base_type = type & ~(SOCK_NONBLOCK | SOCK_CLOEXEC);
  const bool tcp = (domain == AF_INET || domain == AF_INET6) && base_type == SOCK_STREAM &&
                   (protocol == 0 || protocol == IPPROTO_TCP);
  fd_table().retire(fd);  // closed behind our back (raw syscall): start afresh
  if (SocketSlot* slot = fd_table().get(fd)) {
    if (tcp) {
      slot->app_options.store(options_seen_since_creation, std::memory_order_relaxed);
    }
    slot->kind.store(tcp ? FdKind::tcp : FdKind::other, std::memory_order_release);
  }
}

namespace {

// connect(AF_UNSPEC) disconnects: the socket is unconnected again, and its next connect makes a
// new connection. The one it had (or was making) ends here, as at a close, while the kernel still
// knows its ends; the socket starts afresh, its rule chosen again at that connect, keeping what the
// app set on it.
void before_disconnect(int fd, SocketSlot& slot) noexcept {
  const std::uint16_t app_options = slot.app_options.load(std::memory_order_relaxed);
  end_connection(fd, slot);
  fd_table().retire(fd);
  if (SocketSlot* fresh = fd_table().get(fd)) {
    fresh->app_options.store(app_options, std::memory_order_relaxed);
    fresh->kind.store(FdKind::tcp, std::memory_order_release);
  }
}

// As the kernel takes it: a length past sockaddr_storage (or negative as its int) is EINVAL
// before the family is looked at, and the connection goes on.
bool is_disconnect(const sockaddr* addr, socklen_t len) noexcept {
  return len >= static_cast<socklen_t>(sizeof(sa_family_t)) &&
         len <= static_cast<socklen_t>(sizeof(sockaddr_storage)) &&
         read_app_object<sa_family_t>(addr) == std::optional<sa_family_t>(AF_UNSPEC);
}

}  // namespace

void before_connect(int fd, const sockaddr* addr, socklen_t len) noexcept {
  // A later connect on a socket that connected, or began to: a disconnect, or the same
  // connection asked about again (a non-blocking connect polled), which changes nothing here.
  if (SocketSlot* slot = fd_table().find(fd); slot != nullptr && slot->is_tcp() && rule_chosen(*slot)) {
    if (active_runtime() != nullptr && is_disconnect(addr, len) && !in_child_sharing_memory()) {
      const ErrnoSaver saver;
      before_disconnect(fd, *slot);
    }
    return;
  }
  for_unchosen_tcp_socket(fd, [&](SocketSlot& slot, const Runtime& runtime) {
    config::ConnectionFacts facts;
    facts.role = config::Role::client;
    facts.peer = app_endpoint(addr, len);
    if (facts.peer.family == 0) {
      return;  // AF_UNSPEC (disconnect), garbage or a bad pointer: the kernel will answer
    }
    // A client's rule matches on the peer (its port included): its own port is not asked.
    choose_and_apply(fd, slot, runtime, facts, SocketRole::client, ApplyPhase::before_connect);
  });
}

void after_fastopen_send(int fd) noexcept {
  if (in_signal_handler()) {
    return;
  }
  const ErrnoSaver saver;
  SocketSlot* slot = fd_table().find(fd);
  if (active_runtime() != nullptr && slot != nullptr && slot->is_tcp()) {
    look_at_connect_later(fd, *slot);
  }
}

void after_connect(int fd, int result) noexcept {
  const int error = result == 0 ? 0 : errno;
  if (in_signal_handler()) {
    return;
  }
  const ErrnoSaver saver;
  const Runtime* runtime = active_runtime();
  SocketSlot* slot = fd_table().find(fd);
  if (runtime == nullptr || slot == nullptr || !slot->is_tcp()) {
    return;
  }
  // Still connecting (non-blocking, or a blocking one interrupted by a signal): the conn_open
  // waits for SO_ERROR, the worker or the close; the send buffer is sized on the first write.
  // Only such a connect is the worker's to look at: one that returned is complete now.
  if (error == EINPROGRESS || error == EALREADY || error == EINTR) {
    look_at_connect_later(fd, *slot);
    return;
  }
  complete_pending_open(fd, *slot, *runtime->policy, error == EISCONN ? 0 : error, /*established=*/error == 0);
  if (error != 0 || !slot->has_flag(flag_rtt_auto_pending)) {
    return;
  }
  try {
    resolve_rtt_auto(fd, *slot, *runtime);
  } catch (...) {
  }
}

void after_app_getsockopt(int fd, int level, int name, const void* value, const socklen_t* len, int result) noexcept {
  if (result != 0 || level != SOL_SOCKET || name != SO_ERROR || in_signal_handler()) {
    return;
  }
  const ErrnoSaver saver;
  const Runtime* runtime = active_runtime();
  SocketSlot* slot = fd_table().find(fd);
  if (runtime == nullptr || slot == nullptr || !slot->is_tcp()) {
    return;
  }
  // The kernel wrote both (the call succeeded): the app's memory, read as the kernel left it.
  const std::optional<socklen_t> length = read_app_object<socklen_t>(len);
  const std::optional<int> error =
      length.has_value() && *length >= static_cast<socklen_t>(sizeof(int)) ? read_app_object<int>(value) : std::nullopt;
  if (error.has_value()) {
    complete_pending_open(fd, *slot, *runtime->policy, *error);
  }
}

void before_listen(int fd) noexcept {
  for_unchosen_tcp_socket(fd, [&](SocketSlot& slot, const Runtime& runtime) {
    config::ConnectionFacts facts;
    facts.role = config::Role::server;
    KnownState known;
    known.local = local_endpoint(fd);
    known.local_known = true;
    facts.local_port = known.local.port;
    choose_and_apply(fd, slot, runtime, facts, SocketRole::listener, ApplyPhase::before_listen, known);
  });
}

namespace {

// The peer accept() wrote: into the shim's own buffer, or into the app's (read there when it
// lies on the thread's stack); false when it must be asked (getpeername).
bool accepted_peer(const AcceptPeer& accepted, config::Endpoint& peer) {
  if (accepted.app_address == nullptr) {
    if (accepted.own_length > sizeof accepted.own) {
      return false;
    }
    peer = config::endpoint_from_sockaddr(reinterpret_cast<const sockaddr*>(&accepted.own), accepted.own_length);
    return peer.family != 0;
  }
  const std::optional<socklen_t> length = read_app_object<socklen_t>(accepted.app_length);
  if (!length.has_value() || *length > static_cast<socklen_t>(sizeof(sockaddr_storage))) {
    return false;  // cut short by the app's buffer: the kernel says it whole
  }
  sockaddr_storage copy{};
  if (!read_app_memory(&copy, accepted.app_address, *length)) {
    return false;
  }
  peer = config::endpoint_from_sockaddr(reinterpret_cast<const sockaddr*>(&copy), *length);
  return peer.family != 0;
}

}  // namespace

void after_accept(int listen_fd, int fd, const AcceptPeer& accepted) noexcept {
  if (fd < 0) {
    return;
  }
  const ErrnoSaver saver;
  const Runtime* runtime = active_runtime();
  if (runtime == nullptr) {
    return;
  }
  try {
    fd_table().retire(fd);
    if (in_signal_handler()) {
      count_untuned_in_signal_handler();  // classified on its first use, outside the handler
      return;
    }
    SocketSlot* listener = tcp_slot_for_setup(listen_fd, *runtime);
    SocketSlot* slot = fd_table().get(fd);
    if (slot == nullptr) {
      return;
    }
    if (listener == nullptr) {
      slot->kind.store(FdKind::other, std::memory_order_release);  // a unix or other stream listener
      return;
    }
    slot->kind.store(FdKind::tcp, std::memory_order_release);
    config::ConnectionFacts facts;
    facts.role = config::Role::server;
    KnownState known;
    // The peer is asked only when a rule or the log needs it; the local end is the listener's.
    if (runtime->rules_match_peers || log_enabled(LogLevel::info)) {
      if (!accepted_peer(accepted, known.peer)) {
        known.peer = peer_endpoint(fd);
      }
      known.peer_known = true;
      facts.peer = known.peer;
    }
    config::Endpoint listening;
    if (listener_address(*listener, listening)) {
      facts.local_port = listening.port;
      known.local = listening;
      known.local_known = !config::is_unspecified(listening);  // on every address: which one, the kernel says
    } else if (!runtime->policy->rules.empty()) {
      known.local = local_endpoint(fd);
      known.local_known = true;
      facts.local_port = known.local.port;
    }
    // The listener's TCP_NODELAY, which the accepted socket inherits, is off while on-wait
    // handles it there (the app's own TCP_NODELAY clears that).
    known.nodelay_off = listener->has_flag(flag_push_on_wait);
    facts.program = runtime->program;
    const int rule = config::match_rule(*runtime->policy, facts);
    const bool inherited = rule == listener->rule_index.load(std::memory_order_relaxed);
    choose_and_apply(fd, *slot, *runtime, facts, SocketRole::server,
                     inherited ? ApplyPhase::accepted_inherited : ApplyPhase::accepted, known);
  } catch (...) {
  }
}

SockoptVerdict on_app_setsockopt(int fd, int level, int name, const void* value, socklen_t len) noexcept {
  const ErrnoSaver saver;
  const Runtime* runtime = active_runtime();
  if (runtime == nullptr) {
    return SockoptVerdict::pass;
  }
  if (in_signal_handler()) {
    // Only what is async-signal-safe: the gate learns of a cork and of Nagle, and "force"
    // still keeps TCP_NODELAY=0 and TCP_CORK=1 from the kernel (not logged from here).
    if (SocketSlot* slot = fd_table().find(fd);
        slot != nullptr && slot->is_tcp() && level == IPPROTO_TCP && (name == TCP_CORK || name == TCP_NODELAY)) {
      if (const std::optional<int> number = int_value(value, len)) {
        const bool push_due = name == TCP_CORK && slot->keep_warm_gate.set_corked(*number != 0);
        const bool vetoed = name == TCP_NODELAY ? *number == 0 : *number != 0;
        if (vetoed && slot->has_flag(flag_nodelay_forced)) {
          return SockoptVerdict::swallow;
        }
        if (name == TCP_NODELAY) {
          slot->keep_warm_gate.set_nagle(*number == 0);
          slot->clear_flag(flag_push_on_wait);  // the app's Nagle from now on
        }
        return push_due ? SockoptVerdict::pass_then_push : SockoptVerdict::pass;
      }
    }
    return SockoptVerdict::pass;
  }
  try {
    SocketSlot* slot = tcp_slot_for_setup(fd, *runtime);
    if (slot == nullptr) {
      return SockoptVerdict::pass;
    }
    const bool buffer_option = level == SOL_SOCKET && (name == SO_SNDBUF || name == SO_RCVBUF);
    const bool any_buffer_option =
        buffer_option || (level == SOL_SOCKET && (name == SO_SNDBUFFORCE || name == SO_RCVBUFFORCE));
    const bool nodelay_or_cork = level == IPPROTO_TCP && (name == TCP_NODELAY || name == TCP_CORK);
    // Only these options' values matter here; the app's pointer is read only for them.
    const std::optional<int> number =
        any_buffer_option || nodelay_or_cork ? int_value(value, len) : std::optional<int>{};
    bool push_due = false;
    if (level == IPPROTO_TCP && name == TCP_CORK && number.has_value()) {
      // Corked writes are a message in the making, whether or not the kernel sees the cork:
      // the gate learns it before a "force" veto swallows the call.
      push_due = slot->keep_warm_gate.set_corked(*number != 0);
    }
    if (!rule_chosen(*slot)) {
      if (buffer_option && number.has_value() && runtime->holds_app_buffers) {
        // Held until connect()/listen() picks the rule: the kernel's buffer lock cannot be undone.
        (name == SO_RCVBUF ? slot->held_rcvbuf : slot->held_sndbuf)
            .store(*number < 0 ? 0 : *number, std::memory_order_relaxed);
        return SockoptVerdict::swallow;
      }
      if (const AppOption option = app_option_for(level, name); option != AppOption{}) {
        slot->app_options.fetch_or(option, std::memory_order_relaxed);
      }
      return SockoptVerdict::pass;
    }
    if (slot->has_flag(flag_nodelay_forced) && level == IPPROTO_TCP && number.has_value()) {
      if (name == TCP_NODELAY && *number == 0) {
        log_veto(fd, *slot, flag_veto_nodelay_logged, "TCP_NODELAY=0 ignored (nodelay = \"force\")");
        return SockoptVerdict::swallow;
      }
      if (name == TCP_CORK && *number != 0) {
        log_veto(fd, *slot, flag_veto_cork_logged, "TCP_CORK=1 ignored (nodelay = \"force\")");
        return SockoptVerdict::swallow;
      }
    }
    if (any_buffer_option && number.has_value() && slot->has_flag(flag_override_buffers)) {
      log_veto(fd, *slot, flag_veto_buffers_logged,
               std::string(name == SO_RCVBUF || name == SO_RCVBUFFORCE ? "SO_RCVBUF" : "SO_SNDBUF") + "=" +
                   std::to_string(*number) + " ignored (override_app_buffers)");
      return SockoptVerdict::swallow;
    }
    if (level == IPPROTO_TCP && name == TCP_NODELAY && number.has_value()) {
      slot->keep_warm_gate.set_nagle(*number == 0);
      slot->clear_flag(flag_push_on_wait);  // the app's Nagle from now on
    }
    if (push_due) {
      return SockoptVerdict::pass_then_push;
    }
  } catch (...) {
  }
  return SockoptVerdict::pass;
}

void end_keep_warm_framing_lost(SocketSlot& slot) noexcept {
  // Once: later writes skip the gate, and the worker drops the connection at its next look.
  if ((slot.flags.fetch_and(static_cast<std::uint16_t>(~flag_keep_warm), std::memory_order_relaxed) & flag_keep_warm) !=
      0) {
    slot.stats.counters.keep_warm_ended.fetch_add(1, std::memory_order_relaxed);
  }
}

void push_held_tail(int fd) noexcept {
  const ErrnoSaver saver;
  const SocketSlot* slot = fd_table().find(fd);
  const int on = 1;
  const int off = 0;
  if (slot != nullptr && next::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on) == 0 &&
      slot->keep_warm_gate.nagle()) {
    next::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &off, sizeof off);
  }
}

bool answer_app_getsockopt(int fd, int level, int name, void* value, socklen_t* len) noexcept {
  if (level != SOL_SOCKET || (name != SO_SNDBUF && name != SO_RCVBUF)) {
    return false;
  }
  SocketSlot* slot = fd_table().find(fd);
  if (slot == nullptr || !slot->is_tcp() || rule_chosen(*slot)) {
    return false;
  }
  const std::int32_t held = (name == SO_RCVBUF ? slot->held_rcvbuf : slot->held_sndbuf).load(std::memory_order_relaxed);
  if (held == kNoHeldBuffer) {
    return false;
  }
  const ErrnoSaver saver;
  // The app's pointers are the kernel's to judge: an unreadable length or an unwritable value
  // goes to the real call, which answers EFAULT (or EINVAL for a short length).
  const std::optional<socklen_t> capacity = read_app_object<socklen_t>(len);
  if (!capacity.has_value() || *capacity < static_cast<socklen_t>(sizeof(int))) {
    return false;
  }
  // What the kernel would report: the value clamped to net.core.*mem_max, doubled.
  const HostBufferFacts& host = host_buffer_facts();
  const std::uint64_t max = name == SO_RCVBUF ? host.rcvbuf.core_max : host.sndbuf.core_max;
  std::uint64_t clamped = static_cast<std::uint64_t>(held);
  if (max != 0 && clamped > max) {
    clamped = max;
  }
  const int reported = static_cast<int>(std::min<std::uint64_t>(clamped * 2, INT32_MAX));
  const socklen_t reported_len = sizeof reported;
  return write_app_memory(value, &reported, sizeof reported) &&
         write_app_memory(len, &reported_len, sizeof reported_len);
}

SocketSlot* classify_for_io(int fd) noexcept {
  const ErrnoSaver saver;
  if (active_runtime() == nullptr) {
    return nullptr;
  }
  const FdKind kind = classify_fd(fd);
  SocketSlot* slot = kind == FdKind::unknown ? nullptr : fd_table().get(fd);
  if (slot == nullptr) {
    return nullptr;
  }
  slot->kind.store(kind, std::memory_order_release);
  return kind == FdKind::tcp ? slot : nullptr;
}

void size_sndbuf_from_measured_rtt(SocketSlot& slot, int fd) noexcept {
  const ErrnoSaver saver;
  const Runtime* runtime = active_runtime();
  if (runtime == nullptr || in_signal_handler()) {
    return;  // a later write does it
  }
  try {
    resolve_rtt_auto(fd, slot, *runtime);
  } catch (...) {
  }
}

void after_read(SocketSlot& slot, int fd, ssize_t result) noexcept {
  if (result > 0 && slot.has_flag(flag_quickack)) {
    const ErrnoSaver saver;
    const int one = 1;
    next::setsockopt(fd, IPPROTO_TCP, TCP_QUICKACK, &one, sizeof one);
  }
}

bool before_close(int fd) noexcept {
  if (is_log_fd(fd)) {
    return false;
  }
  if (closing_in_vfork_child(fd)) {
    return true;
  }
  if (fd == STDERR_FILENO) {
    app_releases_stderr();
  }
  end_connection_if_tcp(fd);
  fd_table().retire(fd);
  return true;
}

int shim_fds_in_range(unsigned int first, unsigned int last, int (&fds)[kMaxLogFds]) noexcept {
  int own[kMaxLogFds];
  const int count = log_fds(own);
  int inside = 0;
  for (int i = 0; i < count; ++i) {
    if (static_cast<unsigned int>(own[i]) >= first && static_cast<unsigned int>(own[i]) <= last) {
      fds[inside++] = own[i];
    }
  }
  return inside;
}

void before_dup_onto(int from, int target) noexcept {
  const ErrnoSaver saver;
  if (from == target || next::fcntl(from, F_GETFD, 0) < 0) {
    return;  // dup2 of a descriptor onto itself, or EBADF/EINVAL: nothing is closed
  }
  if (closing_in_vfork_child(target)) {
    return;
  }
  move_log_fd_away_from(target);
  if (target == STDERR_FILENO) {
    app_releases_stderr();
  }
  end_connection_if_tcp(target);  // dup2 closes what `target` named
}

void before_close_range(unsigned int first, unsigned int last, int flags) noexcept {
  const bool valid = first <= last && (flags & ~(CLOSE_RANGE_CLOEXEC | CLOSE_RANGE_UNSHARE)) == 0;
  if (valid && (flags & CLOSE_RANGE_CLOEXEC) == 0 && !in_vfork_child()) {  // EINVAL closes nothing
    if (first <= STDERR_FILENO && last >= STDERR_FILENO) {
      app_releases_stderr();
    }
    fd_table().for_each_tcp([&](int fd, SocketSlot& slot) {
      if (static_cast<unsigned int>(fd) >= first && static_cast<unsigned int>(fd) <= last) {
        end_connection(fd, slot);
      }
    });
    fd_table().retire_range(first, last);
  }
}

void after_dup(int from, int to) noexcept {
  if (to >= 0 && to != from) {
    if (SocketSlot* slot = fd_table().find(from); slot != nullptr && slot->is_tcp() && in_vfork_child()) {
      if (slot->has_flag(flag_keep_warm)) {
        stop_keep_warm(*slot);  // the copy (a standard descriptor, say) goes to the program exec'ed
      }
      return;
    }
    fd_table().copy(from, to);
    // Each descriptor has its own gate, so heartbeats could slip between writes on the other.
    for (const int fd : {from, to}) {
      if (SocketSlot* slot = fd_table().find(fd); slot != nullptr && slot->has_flag(flag_keep_warm)) {
        stop_keep_warm(*slot);
      }
    }
    // The duplicate is measured on its own, from now, and summarized when it closes.
    if (SocketSlot* copy = fd_table().find(to); copy != nullptr && copy->has_flag(flag_measured)) {
      copy->stats.reset(monotonic_ns());
    }
  }
}

namespace {
// fn(fd) for every descriptor in the message's SCM_RIGHTS control messages. The kernel has read
// (or written) this memory for the call that just succeeded.
template <typename Fn>
void for_each_passed_fd(const msghdr& message, Fn fn) noexcept {
  if (message.msg_control == nullptr || message.msg_controllen < sizeof(cmsghdr)) {
    return;
  }
  for (const cmsghdr* header = CMSG_FIRSTHDR(&message); header != nullptr;
       header = CMSG_NXTHDR(const_cast<msghdr*>(&message), const_cast<cmsghdr*>(header))) {
    if (header->cmsg_level != SOL_SOCKET || header->cmsg_type != SCM_RIGHTS || header->cmsg_len < CMSG_LEN(0)) {
      continue;
    }
    const std::size_t count = (header->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (std::size_t i = 0; i < count; ++i) {
      int fd = -1;
      std::memcpy(&fd, CMSG_DATA(header) + i * sizeof(int), sizeof fd);
      fn(fd);
    }
  }
}
}  // namespace

void after_rights_sent(const msghdr& message) noexcept {
  for_each_passed_fd(message, [](int fd) {
    if (SocketSlot* slot = fd_table().find(fd); slot != nullptr && slot->has_flag(flag_keep_warm)) {
      stop_keep_warm(*slot);
    }
  });
}

void after_rights_received(const msghdr& message) noexcept {
  for_each_passed_fd(message, [](int fd) {
    fd_table().retire(fd);  // a number that was closed behind the hooks: start afresh
    if (SocketSlot* slot = fd_table().get(fd)) {
      slot->set_flag(flag_received);
    }
  });
}

void before_unfollowed_write(int fd) noexcept {
  SocketSlot* slot = fd_table().find(fd);
  if (slot == nullptr || !slot->is_tcp() || !slot->has_flag(flag_keep_warm)) {
    return;
  }
  const ErrnoSaver saver;
  slot->keep_warm_gate.stop_heartbeats();
  slot->framer.lose(FramingLoss::unseen_bytes);
  end_keep_warm_framing_lost(*slot);
}

void after_fdopen(int fd) noexcept {
  if (SocketSlot* slot = fd_table().get(fd)) {
    slot->set_flag(flag_stdio);
    if (slot->has_flag(flag_keep_warm)) {
      stop_keep_warm(*slot);
    }
  }
}

void adopt_inherited_sockets() noexcept {
  const ErrnoSaver saver;
  const Runtime* runtime = active_runtime();
  if (runtime == nullptr) {
    return;
  }
  try {
    DIR* dir = opendir("/proc/self/fd");
    if (dir == nullptr) {
      return;
    }
    const int own_fd = dirfd(dir);
    while (const dirent* entry = readdir(dir)) {
      char* end = nullptr;
      const long fd = std::strtol(entry->d_name, &end, 10);
      if (end != entry->d_name && *end == '\0' && fd != own_fd && fd <= FdTable::kMaxFd) {
        (void)tcp_slot_for_setup(static_cast<int>(fd), *runtime, /*inherited=*/true);
      }
    }
    closedir(dir);
  } catch (...) {
  }
}

}  // namespace tcptune::shim
