// The supervised program's tuned connections, followed without holding a descriptor of any:
// clients from their connect, accepted sockets from a trapped setsockopt or found in the dumps
// by their listener's port (one accepted and closed between two dumps is missed), each by
// inode through sock_diag. When one leaves the dump its conn_close record is written
// with the last TCP_INFO seen (RTT, retransmits, cwnd, delivery rate, bytes acked), at most one
// poll old. Between two dumps it also sees a window restarted after idle (idle_restart records,
// polled_idle_restart.hpp). Write latency needs the program's writes and is absent; the
// records say so. It also counts, per rule, the connections it follows and the idle restarts
// it reports: the supervisor's Prometheus textfile.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "option_applier.hpp"
#include "sock_diag.hpp"
#include "socket_role.hpp"
#include "supervisor_log.hpp"
#include "tcptune/config/policy.hpp"
#include "tracked_connections.hpp"

namespace tcptune::supervisor {

// What a connection is known by when the watch starts following it: a client's connect
// address (its local one comes with the connect), an accepted socket's two ends.
struct KnownEnds {
  config::Endpoint local;
  config::Endpoint peer;
  std::uint64_t cookie = 0;  // a client's SO_COOKIE, which its TIME_WAIT entry keeps
  int family = 0;            // the socket's own (AF_INET6 for a v4-mapped one); 0 if unknown
};

class ConnectionWatch {
 public:
  // Since a connection was first followed, whether open or closed since.
  struct RuleCounts {
    std::uint64_t connections = 0;
    std::uint64_t idle_restarts = 0;
  };

  // The least time between a dump and an early one (watch_by_inode).
  static constexpr std::int64_t kEarlyPollGap = 20'000'000;
  // And the least as a multiple of the last dump's duration: at most a tenth of a thread on early
  // dumps. A dump walks every TCP socket of the host, TIME_WAIT entries of every namespace
  // included: 3.3 ms for 37,700 of them here (tcptune_supervised_call_costs). A client closed by
  // its peer before a dump shows it leaves no TIME_WAIT entry: its local end is lost, so the gap
  // is also how long a connection must last to be named in full.
  static constexpr std::int64_t kEarlyPollCostShare = 10;
  // How long after its connect a client's conn_open still gets early dumps (at least two early
  // gaps): then the poll's.
  static constexpr std::int64_t kPendingOpenEarlyNs = 200'000'000;

  // Polls at most every `interval_ns`; without sock_diag (a kernel without inet_diag) it
  // follows nothing, and says so once. It follows nothing either when neither its records nor
  // the textfile would be written.
  ConnectionWatch(const config::Policy& policy, SupervisorLog& log, std::int64_t interval_ns);

  // A connection the supervisor saw a call on: a client at its connect, an accepted socket at a
  // trapped setsockopt (one seen already is left as it is). `open`: a client's conn_open
  // options, written once a dump shows the connection with both ends (an early dump is made
  // for it, as for watch_by_inode), or its TIME_WAIT entry (it closed first); one never shown
  // (a connect that failed, or a connection that came and went between two dumps without a
  // TIME_WAIT here) gets it when it is given up or at the end, with its peer only.
  void watch_connection(std::uint64_t inode, int app_fd, shim::SocketRole role, int rule, pid_t pid,
                        const std::string& program, const KnownEnds& ends = {},
                        std::optional<shim::ApplyReport> open = std::nullopt);
  // A listener: the sockets it accepts are followed from the first dump they appear in.
  void watch_listener(std::uint64_t inode, const config::Endpoint& local, int family, pid_t pid,
                      const std::string& program);
  // A TCP socket known only by inode (where sockets are handed over, one the supervisor never
  // had, seen at a trapped setsockopt: an accepted one): followed from the first dump that shows
  // it connected, a server if its local port is one a watched listener listened on, with the
  // rule its endpoints choose. A dump is made early for it (kEarlyPollGap after the last, or
  // kEarlyPollCostShare times the last dump's duration if longer), since its role and rule come
  // from the dump; one never shown is given up after kUnseenPolls dumps.
  void watch_by_inode(std::uint64_t inode, int app_fd, pid_t pid, const std::string& program);
  // A dump if one is due: new accepted sockets are followed, closed ones get conn_close.
  void tick();
  // How long until a dump is due (0: now), for the records thread's wait: an early one comes
  // then even when no call does.
  [[nodiscard]] std::int64_t next_dump_in_ns() const;
  // The last dump; what is still open is reported with open_at_exit.
  void finish();
  // By rule index (-1: the defaults); only rules that have followed a connection.
  [[nodiscard]] const std::map<int, RuleCounts>& counts_by_rule() const noexcept { return counts_; }

 private:
  struct Watched {
    int app_fd = -1;  // -1 for an accepted socket, whose descriptor the supervisor never saw
    shim::SocketRole role = shim::SocketRole::client;
    int rule = -1;
    pid_t pid = 0;
    std::string program;
    std::int64_t opened_ns = 0;
    std::uint64_t idle_restarts = 0;
    // Its ends as last known (a dump, or the call), for records when no dump shows it any more.
    KnownEnds ends{};
    std::optional<shim::ApplyReport> open{};  // a client's conn_open, not written yet
  };
  struct Listener {
    config::Endpoint local;  // the address (any, if all zero) and port it listens on
    int family = 0;          // the socket's own, as KnownEnds::family
    pid_t pid = 0;
    std::string program;
    // Dumps that did not show it listening yet: the dump may come before the program's listen
    // has run (its answer lets the call go on); given up after kUnseenPolls.
    std::uint32_t unseen_polls = 0;
    bool seen = false;
  };

  static constexpr std::uint32_t kUnseenPolls = 10;
  static constexpr std::size_t kMostFilterPorts = 128;
  struct KnownByInode {
    int app_fd = -1;
    pid_t pid = 0;
    std::string program;
    std::uint32_t polls = 0;
  };

  void poll(bool at_exit);
  // The least time from one dump to an early one, by kEarlyPollGap and kEarlyPollCostShare.
  [[nodiscard]] std::int64_t early_gap_ns() const noexcept;
  // The ports that name every socket the next dump must show: the listeners' and the servers'
  // local ports, the clients' peer ports; none (every port) while a socket known by inode alone
  // waits (its ports are what the dump is for), or one followed has no port known, or beyond
  // kMostFilterPorts. And the families of the sockets followed, each as the last dump that showed
  // it says, else as its call said until a dump misses it: both while one's is unknown.
  [[nodiscard]] PortFilter dump_filter() const;
  // The last dump's socket with this inode, or nullptr.
  [[nodiscard]] const DiagSocket* in_dump(std::uint64_t inode) const;
  void follow_known_by_inode(std::int64_t now_ns);
  void forget_closed_listeners();
  void follow_accepted(const std::vector<DiagSocket>& dump, std::int64_t now_ns);
  void report_idle_restarts(const std::vector<DiagSocket>& dump, std::uint32_t gap_ms);
  void report_closed(TrackedConnections<Watched>::Connection& connection, std::int64_t now_ns, bool at_exit);
  void write_pending_opens(const std::vector<DiagSocket>& dump, std::int64_t now_ns);
  void write_open(std::uint64_t inode, Watched& watched);
  void follow(std::uint64_t inode, Watched watched);

  const config::Policy& policy_;
  SupervisorLog& log_;
  std::int64_t interval_ns_;
  std::int64_t last_poll_ns_ = 0;
  std::int64_t last_dump_cost_ns_ = 0;
  bool early_poll_ = false;          // a socket known by inode waits for a dump
  bool conn_close_records_ = false;  // [log] summary, and a log that takes info records
  std::size_t pending_opens_ = 0;    // clients whose conn_open waits for a dump
  // tcp_slow_start_after_idle in this namespace: without it no window restarts after idle.
  bool restarts_after_idle_ = false;
  std::optional<SockDiag> diag_;
  TrackedConnections<Watched> tracked_;
  std::map<std::uint64_t, Listener> listeners_;  // by inode, while it listens
  std::set<std::uint16_t> listened_ports_;       // every port a watched listener listened on
  std::map<std::uint64_t, KnownByInode> by_inode_;
  std::vector<DiagSocket> dump_;
  std::unordered_map<std::uint64_t, const DiagSocket*> dump_index_;  // dump_ by inode
  std::map<int, RuleCounts> counts_;
};

}  // namespace tcptune::supervisor
