#include "connection_watch.hpp"

#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <ctime>
#include <unordered_map>
#include <utility>

#include "conn_open_record.hpp"
#include "connection_record.hpp"
#include "polled_idle_restart.hpp"
#include "tcptune/config/host_sysctl.hpp"
#include "tcptune/config/rule_matcher.hpp"

namespace tcptune::supervisor {

namespace {

std::int64_t monotonic_ns() {
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<std::int64_t>(now.tv_sec) * 1'000'000'000 + now.tv_nsec;
}

}  // namespace

ConnectionWatch::ConnectionWatch(const config::Policy& policy, SupervisorLog& log, std::int64_t interval_ns)
    : policy_(policy),
      log_(log),
      interval_ns_(interval_ns),
      conn_close_records_(log_.enabled(config::LogLevel::info) && policy_.log.summary) {
  if (!log_.enabled(config::LogLevel::info) && policy_.log.prometheus_textfile.empty()) {
    return;  // nothing would be written (conn_open records need the dumps too: a client's local end)
  }
  restarts_after_idle_ = config::read_sysctl("net/ipv4/tcp_slow_start_after_idle").value_or("1") != "0";
  std::string error;
  diag_ = SockDiag::open(error);
  if (!diag_.has_value()) {
    telemetry::Record record("supervisor_warning");
    record.add("message", "no conn_close records: " + error);
    log_.write(config::LogLevel::warn, getpid(), "tcptune", record);
  }
}

void ConnectionWatch::watch_connection(std::uint64_t inode, int app_fd, shim::SocketRole role, int rule, pid_t pid,
                                       const std::string& program, const KnownEnds& ends,
                                       std::optional<shim::ApplyReport> open) {
  Watched watched{app_fd, role, rule, pid, program, monotonic_ns(), 0, ends, std::move(open)};
  if (!diag_.has_value() || inode == 0) {
    write_open(inode, watched);  // no dump will show it: with what is known now
    return;
  }
  follow(inode, std::move(watched));
}

void ConnectionWatch::follow(std::uint64_t inode, Watched watched) {
  if (TrackedConnections<Watched>::Connection* tracked = tracked_.find(inode); tracked != nullptr) {
    // A client tuned again before any dump showed it: its first connect failed (refused, or a
    // sockaddr of the other family) and left it unconnected, so this one is its connection. Counted
    // once, under the first call's rule.
    if (!tracked->last_seen.has_value() && tracked->metadata.open.has_value() && watched.open.has_value()) {
      tracked->metadata = std::move(watched);
      tracked->unseen_updates = 0;
      early_poll_ = true;
      return;
    }
    write_open(inode, watched);  // followed already: a conn_open is written at once, as known
    return;
  }
  const int rule = watched.rule;
  const bool open = watched.open.has_value();
  if (tracked_.add(inode, std::move(watched))) {
    ++counts_[rule].connections;
    if (open) {
      ++pending_opens_;
      early_poll_ = true;
    }
  }
}

void ConnectionWatch::write_open(std::uint64_t inode, Watched& watched) {
  if (!watched.open.has_value()) {
    return;
  }
  if (log_.enabled(config::LogLevel::info)) {
    log_.write(
        config::LogLevel::info, watched.pid, watched.program,
        supervised_conn_open(watched.app_fd, watched.role, policy_, watched.rule, shim::ApplyPhase::before_connect,
                             watched.ends.local, watched.ends.peer, inode, *watched.open));
  }
  watched.open.reset();
}

// Clients whose conn_open waits: the dump shows them connecting or connected (both ends known),
// or, closed already, their TIME_WAIT entry by cookie (then they are reported closed at once).
void ConnectionWatch::write_pending_opens(const std::vector<DiagSocket>& dump, std::int64_t now_ns) {
  if (pending_opens_ == 0) {
    return;
  }
  std::unordered_map<std::uint64_t, const DiagSocket*> time_wait;  // by cookie
  for (const DiagSocket& socket : dump) {
    if (socket.inode == 0 && socket.cookie != 0 && socket.state == TCP_TIME_WAIT) {
      time_wait.emplace(socket.cookie, &socket);
    }
  }
  std::vector<std::uint64_t> ended;
  tracked_.for_each([&](std::uint64_t inode, Watched& watched) {
    if (!watched.open.has_value()) {
      return;
    }
    const DiagSocket* found = in_dump(inode);
    bool closed = false;
    if (found == nullptr || found->local.port == 0 || found->peer.family == 0) {
      const auto waiting = watched.ends.cookie != 0 ? time_wait.find(watched.ends.cookie) : time_wait.end();
      if (waiting == time_wait.end()) {
        // Its connect may not have run yet when the dump was made: early dumps again, for a while.
        early_poll_ = early_poll_ || now_ns - watched.opened_ns < std::max(kPendingOpenEarlyNs, 2 * early_gap_ns());
        return;
      }
      found = waiting->second;
      closed = true;
    }
    watched.ends.local = found->local;
    watched.ends.peer = found->peer;
    write_open(inode, watched);
    --pending_opens_;
    if (closed) {
      ended.push_back(inode);
    }
  });
  for (const std::uint64_t inode : ended) {
    if (std::optional<TrackedConnections<Watched>::Connection> connection = tracked_.remove(inode)) {
      report_closed(*connection, now_ns, false);
    }
  }
}

void ConnectionWatch::watch_listener(std::uint64_t inode, const config::Endpoint& local, int family, pid_t pid,
                                     const std::string& program) {
  if (diag_.has_value() && inode != 0) {
    listeners_[inode] = Listener{local, family, pid, program};
    listened_ports_.insert(local.port);
  }
}

void ConnectionWatch::watch_by_inode(std::uint64_t inode, int app_fd, pid_t pid, const std::string& program) {
  if (diag_.has_value() && inode != 0 && tracked_.find(inode) == nullptr) {
    early_poll_ = by_inode_.try_emplace(inode, KnownByInode{app_fd, pid, program, 0}).second || early_poll_;
  }
}

void ConnectionWatch::follow_known_by_inode(std::int64_t now_ns) {
  for (auto it = by_inode_.begin(); it != by_inode_.end();) {
    const DiagSocket* found = in_dump(it->first);
    if (found == nullptr || found->peer.family == 0) {
      it = ++it->second.polls >= kUnseenPolls ? by_inode_.erase(it) : std::next(it);
      continue;
    }
    config::ConnectionFacts facts;
    const bool server = listened_ports_.contains(found->local.port);
    facts.role = server ? config::Role::server : config::Role::client;
    facts.peer = found->peer;
    facts.local_port = found->local.port;
    facts.program = it->second.program;
    const int rule = config::match_rule(policy_, facts);
    follow(it->first, Watched{it->second.app_fd, server ? shim::SocketRole::server : shim::SocketRole::client, rule,
                              it->second.pid, it->second.program, now_ns, 0, KnownEnds{{}, {}, 0, found->family}});
    it = by_inode_.erase(it);
  }
}

namespace {

unsigned family_bit(int family) {
  switch (family) {
    case AF_INET: return PortFilter::kInet;
    case AF_INET6: return PortFilter::kInet6;
    default: return PortFilter::kInet | PortFilter::kInet6;  // unknown: both
  }
}

}  // namespace

PortFilter ConnectionWatch::dump_filter() const {
  PortFilter filter;
  if (!by_inode_.empty()) {
    return filter;
  }
  filter.families = 0;
  std::set<std::uint16_t> local_ports(listened_ports_);
  std::set<std::uint16_t> peer_ports;
  bool every_port_known = true;
  tracked_.for_each_connection([&](const TrackedConnections<Watched>::Connection& connection) {
    const Watched& watched = connection.metadata;
    // Until a dump shows it, the family and peer its call gave, which a connect refused (for a
    // sockaddr of the other family, or by the peer), then made again where the supervisor does not
    // see it (sockets handed over), has wrong: every family and port once a dump missed it.
    const bool missed = !connection.last_seen.has_value() && connection.unseen_updates != 0;
    filter.families |= family_bit(connection.last_seen.has_value() ? connection.last_seen->family
                                  : missed                         ? 0
                                                                   : watched.ends.family);
    const bool client = watched.role == shim::SocketRole::client;
    const config::Endpoint& known = client ? watched.ends.peer : watched.ends.local;
    if (missed) {
      every_port_known = false;
    } else if (known.family != 0) {
      (client ? peer_ports : local_ports).insert(known.port);
    } else if (connection.last_seen.has_value()) {
      (client ? peer_ports : local_ports)
          .insert(client ? connection.last_seen->peer.port : connection.last_seen->local.port);
    } else {
      every_port_known = false;
    }
  });
  for (const auto& [inode, listener] : listeners_) {
    filter.families |= family_bit(listener.family);
    local_ports.insert(listener.local.port);
  }
  if (every_port_known && local_ports.size() + peer_ports.size() <= kMostFilterPorts) {
    filter.local_ports.assign(local_ports.begin(), local_ports.end());
    filter.peer_ports.assign(peer_ports.begin(), peer_ports.end());
  }
  return filter;
}

const DiagSocket* ConnectionWatch::in_dump(std::uint64_t inode) const {
  const auto found = inode == 0 ? dump_index_.end() : dump_index_.find(inode);
  return found == dump_index_.end() ? nullptr : found->second;
}

std::int64_t ConnectionWatch::early_gap_ns() const noexcept {
  return std::max(kEarlyPollGap, kEarlyPollCostShare * last_dump_cost_ns_);
}

std::int64_t ConnectionWatch::next_dump_in_ns() const {
  const std::int64_t since_ns = monotonic_ns() - last_poll_ns_;
  const std::int64_t due_ns = early_poll_ ? std::min(interval_ns_, early_gap_ns()) : interval_ns_;
  return std::max<std::int64_t>(0, due_ns - since_ns);
}

void ConnectionWatch::tick() {
  const std::int64_t since_ns = monotonic_ns() - last_poll_ns_;
  const bool early = early_poll_ && since_ns >= early_gap_ns();
  if (diag_.has_value() && (tracked_.size() != 0 || !listeners_.empty() || !by_inode_.empty()) &&
      (since_ns >= interval_ns_ || early)) {
    poll(false);
  }
}

void ConnectionWatch::finish() {
  if (diag_.has_value() && (tracked_.size() != 0 || !listeners_.empty() || !by_inode_.empty())) {
    poll(true);
  }
}

void ConnectionWatch::poll(bool at_exit) {
  const std::int64_t now_ns = monotonic_ns();
  const std::int64_t gap_ns = now_ns - last_poll_ns_;
  last_poll_ns_ = now_ns;
  early_poll_ = false;  // set again for a client's conn_open that still waits (write_pending_opens)
  dump_.clear();
  dump_index_.clear();
  std::string error;
  // TIME_WAIT too while a client's conn_open waits: one that closed first is found there.
  const std::uint32_t states = connected_tcp_states() | (listeners_.empty() ? 0 : tcp_state_bit(TCP_LISTEN)) |
                               (pending_opens_ == 0 ? 0 : tcp_state_bit(TCP_TIME_WAIT));
  // Only the sockets of the ports the watch follows, where it knows them all: on a host with many
  // connections (or a loop's thousands of TIME_WAIT entries) the rest is most of a dump's cost.
  const bool dumped = diag_->dump(states, dump_, error, dump_filter());
  last_dump_cost_ns_ = monotonic_ns() - now_ns;
  if (!dumped) {
    return;  // a partial dump would close what it missed: wait for the next one
  }
  // Looked up by inode once per followed connection, listener and socket known by inode: an
  // index, not a walk of the dump each (thousands of each in a busy program).
  dump_index_.reserve(dump_.size());
  for (const DiagSocket& socket : dump_) {
    if (socket.inode != 0) {
      dump_index_.emplace(socket.inode, &socket);
    }
  }
  follow_known_by_inode(now_ns);  // before the listeners': it knows the descriptor
  write_pending_opens(dump_, now_ns);
  if (!at_exit) {
    forget_closed_listeners();
    follow_accepted(dump_, now_ns);
  }
  if (restarts_after_idle_) {
    report_idle_restarts(dump_, static_cast<std::uint32_t>(gap_ns / 1'000'000));
  }
  for (auto& closed : tracked_.update(dump_).closed) {
    report_closed(closed, now_ns, false);
  }
  if (at_exit) {
    // Still in the dump: held by a process that outlived the program. Never seen: closed
    // before any dump found it.
    for (auto& remaining : tracked_.take_all()) {
      const bool open = in_dump(remaining.inode) != nullptr;
      report_closed(remaining, now_ns, open);
    }
  }
}

// A listener the program has closed accepts nothing more: what later shows on its port is
// another socket's (another process's, or a new listener's, watched from its own listen). One
// not yet seen listening may be one whose listen has not run yet.
void ConnectionWatch::forget_closed_listeners() {
  for (auto it = listeners_.begin(); it != listeners_.end();) {
    const DiagSocket* found = in_dump(it->first);
    Listener& listener = it->second;
    if (found != nullptr && found->state == TCP_LISTEN) {
      listener.seen = true;
    } else if (listener.seen || ++listener.unseen_polls >= kUnseenPolls) {
      it = listeners_.erase(it);
      continue;
    }
    ++it;
  }
}

// A connection on a watched listener's address and port that is not followed yet was accepted
// since the last dump; its rule is the one the shim would choose at accept. Another process's
// socket on the same port and address (SO_REUSEPORT) cannot be told from the program's.
void ConnectionWatch::follow_accepted(const std::vector<DiagSocket>& dump, std::int64_t now_ns) {
  for (const DiagSocket& socket : dump) {
    if (socket.inode == 0 || socket.state == TCP_LISTEN || socket.peer.family == 0 ||
        tracked_.find(socket.inode) != nullptr) {
      continue;
    }
    const auto listener = std::find_if(listeners_.begin(), listeners_.end(), [&socket](const auto& entry) {
      const config::Endpoint& local = entry.second.local;
      const bool any_address = std::all_of(local.bytes.begin(), local.bytes.end(), [](auto b) { return b == 0; });
      const bool same_family = entry.second.family == 0 || entry.second.family == socket.family;
      return local.port == socket.local.port && same_family &&
             (any_address || (local.family == socket.local.family && local.bytes == socket.local.bytes));
    });
    if (listener == listeners_.end()) {
      continue;
    }
    config::ConnectionFacts facts;
    facts.role = config::Role::server;
    facts.peer = socket.peer;
    facts.local_port = socket.local.port;
    facts.program = listener->second.program;
    const int rule = config::match_rule(policy_, facts);
    follow(socket.inode, Watched{-1, shim::SocketRole::server, rule, listener->second.pid, listener->second.program,
                                 now_ns, 0, KnownEnds{{}, {}, 0, socket.family}});
  }
}

// Before the dump replaces each connection's last one: the two compared.
void ConnectionWatch::report_idle_restarts(const std::vector<DiagSocket>& dump, std::uint32_t gap_ms) {
  for (const DiagSocket& now : dump) {
    auto* connection = tracked_.find(now.inode);
    if (connection == nullptr || !connection->last_seen.has_value() || !connection->last_seen->info.has_value() ||
        !now.info.has_value() || connection->last_seen->cookie != now.cookie || now.congestion.rfind("bbr", 0) == 0) {
      continue;  // BBR keeps its window after idle, and cuts it for other reasons (probing the RTT)
    }
    const std::optional<PolledIdleRestart> restart =
        idle_restart_between(*connection->last_seen->info, *now.info, gap_ms);
    if (!restart.has_value()) {
      continue;
    }
    Watched& watched = connection->metadata;
    ++watched.idle_restarts;
    ++counts_[watched.rule].idle_restarts;
    telemetry::Record record("idle_restart");
    if (watched.app_fd >= 0) {
      record.add("fd", watched.app_fd);
    }
    // The connection's ends and inode, as its conn_close gives them: an accepted socket has no fd
    // in tcptune's records, and several may restart between two of their closes.
    if (now.local.family != 0 && now.local.port != 0) {
      record.add("local", config::format_endpoint(now.local));
    }
    if (now.peer.family != 0) {
      record.add("peer", config::format_endpoint(now.peer));
    }
    record.add("inode", now.inode);
    record.add("rule", config::rule_name(policy_, watched.rule))
        .add("idle_ms", static_cast<std::uint64_t>(restart->idle_ms_at_least))
        .add("rto_ms", static_cast<double>(restart->rto_us) / 1000.0)
        .add("rtt_ms", static_cast<double>(restart->rtt_us) / 1000.0)
        .add("cwnd_before", static_cast<std::uint64_t>(restart->cwnd_before))
        .add("cwnd_after", static_cast<std::uint64_t>(restart->cwnd_after))
        .add("supervised", true)
        .add("note",
             "seen between two polls: idle_ms is at least this, cwnd_after as at the next poll, the write's "
             "size unknown");
    log_.write(config::LogLevel::info, watched.pid, watched.program, record);
  }
}

void ConnectionWatch::report_closed(TrackedConnections<Watched>::Connection& connection, std::int64_t now_ns,
                                    bool at_exit) {
  Watched& watched = connection.metadata;
  if (connection.last_seen.has_value() && connection.last_seen->local.port != 0) {
    watched.ends.local = connection.last_seen->local;
  }
  if (connection.last_seen.has_value() && connection.last_seen->peer.family != 0) {
    watched.ends.peer = connection.last_seen->peer;
  }
  if (watched.open.has_value()) {
    --pending_opens_;
    write_open(connection.inode, watched);  // never shown with both ends: what is known
  }
  if (!conn_close_records_) {
    return;
  }
  telemetry::Record record("conn_close");
  if (watched.app_fd >= 0) {
    record.add("fd", watched.app_fd);
  }
  record.add("role", shim::role_name(watched.role)).add("rule", config::rule_name(policy_, watched.rule));
  if (watched.ends.local.family != 0 && watched.ends.local.port != 0) {
    record.add("local", config::format_endpoint(watched.ends.local));
  }
  if (watched.ends.peer.family != 0) {
    record.add("peer", config::format_endpoint(watched.ends.peer));
  }
  record.add("open_at_exit", at_exit)
      .add("duration_s", static_cast<double>(now_ns - watched.opened_ns) / 1e9)
      .add("supervised", true)
      .add("writes_measured", false)
      .add("idle_restarts", watched.idle_restarts)
      .add("inode", connection.inode);
  if (connection.last_seen.has_value() && connection.last_seen->info.has_value()) {
    shim::add_tcp_info(record, *connection.last_seen->info);
  }
  log_.write(config::LogLevel::info, watched.pid, watched.program, record);
}

}  // namespace tcptune::supervisor
