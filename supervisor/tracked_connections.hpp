// The connections the supervisor tuned, followed from one sock_diag dump to the next by inode: which
// closed (gone from the dump) with the last TCP_INFO seen, and which changed state. Pure: the dumps
// come in, so it is tested without sockets.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

#include "sock_diag.hpp"

namespace tcptune::supervisor {

template <typename Metadata>
class TrackedConnections {
 public:
  struct Connection {
    std::uint64_t inode = 0;
    Metadata metadata{};
    // The latest dump's entry: a closed connection's report is its info, up to one poll old.
    std::optional<DiagSocket> last_seen;
    // Consecutive updates without it before it was first seen: a socket whose connect has not
    // yet run is in no table the dump walks.
    std::uint32_t unseen_updates = 0;
  };
  struct StateChange {
    std::uint64_t inode = 0;
    std::uint8_t from = 0;
    std::uint8_t to = 0;
  };
  struct Changes {
    std::vector<Connection> closed;  // by inode; each no longer tracked
    std::vector<StateChange> state_changes;
  };

  // A connection never seen is given up (closed, with no last_seen) after this many updates.
  explicit TrackedConnections(std::uint32_t unseen_update_limit = 10) : unseen_update_limit_(unseen_update_limit) {}

  // False for inode 0 or one already tracked (which keeps its metadata).
  bool add(std::uint64_t inode, Metadata metadata) {
    if (inode == 0 || connections_.count(inode) != 0) {
      return false;
    }
    connections_.emplace(inode, Connection{inode, std::move(metadata), std::nullopt, 0});
    return true;
  }

  std::optional<Connection> remove(std::uint64_t inode) {
    const auto found = connections_.find(inode);
    if (found == connections_.end()) {
      return std::nullopt;
    }
    Connection connection = std::move(found->second);
    connections_.erase(found);
    return connection;
  }

  // Every connection, no longer tracked, by inode.
  std::vector<Connection> take_all() {
    std::vector<Connection> all;
    all.reserve(connections_.size());
    for (auto& entry : connections_) {
      all.push_back(std::move(entry.second));
    }
    connections_.clear();
    std::sort(all.begin(), all.end(), [](const auto& a, const auto& b) { return a.inode < b.inode; });
    return all;
  }

  const Connection* find(std::uint64_t inode) const {
    const auto found = connections_.find(inode);
    return found == connections_.end() ? nullptr : &found->second;
  }
  Connection* find(std::uint64_t inode) {
    const auto found = connections_.find(inode);
    return found == connections_.end() ? nullptr : &found->second;
  }

  std::size_t size() const { return connections_.size(); }

  // fn(inode, metadata) for every tracked connection, in no order.
  template <typename Fn>
  void for_each(Fn&& fn) {
    for (auto& [inode, connection] : connections_) {
      fn(inode, connection.metadata);
    }
  }

  // fn(connection) for every tracked connection, in no order.
  template <typename Fn>
  void for_each_connection(Fn&& fn) const {
    for (const auto& entry : connections_) {
      fn(entry.second);
    }
  }

  // One dump of every state a tracked connection can be in (connected_tcp_states() or more): a
  // connection seen before and missing now is closed, as is one whose inode now names another
  // socket (another cookie: inode numbers wrap).
  Changes update(const std::vector<DiagSocket>& dump) {
    std::unordered_map<std::uint64_t, const DiagSocket*> present;
    present.reserve(dump.size());
    for (const DiagSocket& socket : dump) {
      if (socket.inode != 0 && connections_.count(socket.inode) != 0) {
        present.emplace(socket.inode, &socket);
      }
    }
    Changes changes;
    for (auto it = connections_.begin(); it != connections_.end();) {
      Connection& connection = it->second;
      const auto found = present.find(connection.inode);
      const DiagSocket* const now = found == present.end() ? nullptr : found->second;
      const bool replaced =
          now != nullptr && connection.last_seen.has_value() && now->cookie != connection.last_seen->cookie;
      if (now != nullptr && !replaced) {
        if (connection.last_seen.has_value() && connection.last_seen->state != now->state) {
          changes.state_changes.push_back(StateChange{connection.inode, connection.last_seen->state, now->state});
        }
        connection.last_seen = *now;
        connection.unseen_updates = 0;
        ++it;
        continue;
      }
      if (!replaced && !connection.last_seen.has_value() && ++connection.unseen_updates < unseen_update_limit_) {
        ++it;
        continue;
      }
      changes.closed.push_back(std::move(connection));
      it = connections_.erase(it);
    }
    const auto by_inode = [](const auto& a, const auto& b) { return a.inode < b.inode; };
    std::sort(changes.closed.begin(), changes.closed.end(), by_inode);
    std::sort(changes.state_changes.begin(), changes.state_changes.end(), by_inode);
    return changes;
  }

 private:
  std::uint32_t unseen_update_limit_;
  std::unordered_map<std::uint64_t, Connection> connections_;
};

}  // namespace tcptune::supervisor
