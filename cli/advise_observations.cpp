#include "advise_observations.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <deque>
#include <map>
#include <tuple>

#include <nlohmann/json.hpp>

#include "log_record.hpp"

namespace tcptune::cli {

namespace {

const nlohmann::json* member(const nlohmann::json& record, const char* key) {
  if (!record.is_object()) {
    return nullptr;
  }
  const auto found = record.find(key);
  return found == record.end() ? nullptr : &*found;
}

std::optional<double> optional_number(const nlohmann::json& object, const char* key) {
  const nlohmann::json* value = member(object, key);
  return value != nullptr && value->is_number() ? std::optional<double>(value->get<double>()) : std::nullopt;
}

std::optional<std::uint64_t> optional_count(const nlohmann::json& object, const char* key) {
  const nlohmann::json* value = member(object, key);
  return value != nullptr && value->is_number() ? std::optional<std::uint64_t>(as_count(*value)) : std::nullopt;
}

// A known endpoint: not absent, and not the unbound 0.0.0.0:0 a client's conn_open has.
bool known_endpoint(const std::string& endpoint) {
  return !endpoint.empty() && endpoint != "0.0.0.0:0" && endpoint != "[::]:0" && endpoint_port(endpoint) != 0;
}

void take_endpoints(const nlohmann::json& record, ObservedConnection& connection) {
  if (const std::string local = string_field(record, "local"); known_endpoint(local)) {
    connection.local = local;
  }
  if (const std::string peer = string_field(record, "peer"); known_endpoint(peer)) {
    connection.peer = peer;
  }
}

ObservedTcpInfo read_tcp_info(const nlohmann::json& info) {
  ObservedTcpInfo out;
  out.rtt_us = optional_number(info, "rtt_us");
  out.min_rtt_us = optional_number(info, "min_rtt_us");
  out.mss = optional_count(info, "mss");
  out.retransmits = optional_count(info, "retransmits");
  out.data_segs_out = optional_count(info, "data_segs_out");
  out.bytes_acked = optional_count(info, "bytes_acked");
  out.delivery_rate_bps = optional_number(info, "delivery_rate_bps");
  out.busy_us = optional_number(info, "busy_us");
  out.rwnd_limited_us = optional_number(info, "rwnd_limited_us");
  out.sndbuf_limited_us = optional_number(info, "sndbuf_limited_us");
  return out;
}

bool is_supervised(const nlohmann::json& record) {
  const nlohmann::json* supervised = member(record, "supervised");
  return supervised != nullptr && *supervised == true;
}

void read_open(const nlohmann::json& record, ObservedConnection& connection) {
  connection.opened = true;
  connection.supervised = connection.supervised || is_supervised(record);
  connection.opened_at_s = record_time_s(string_field(record, "ts"));
  connection.role = string_field(record, "role", "unknown");
  connection.rule = string_field(record, "rule");
  connection.phase = string_field(record, "phase");
  take_endpoints(record, connection);
  const nlohmann::json* options = member(record, "options");
  if (options == nullptr || !options->is_array()) {
    return;
  }
  for (const nlohmann::json& option : *options) {
    if (option.is_object()) {
      connection.options.push_back({string_field(option, "name"), string_field(option, "requested"),
                                    string_field(option, "effective"), string_field(option, "note"),
                                    string_field(option, "status")});
    }
  }
}

void read_close(const nlohmann::json& record, ObservedConnection& connection) {
  connection.closed = true;
  connection.supervised = connection.supervised || is_supervised(record);
  connection.closed_at_s = record_time_s(string_field(record, "ts"));
  if (connection.role.empty() || connection.role == "unknown") {
    connection.role = string_field(record, "role", "unknown");
  }
  if (connection.rule.empty()) {
    connection.rule = string_field(record, "rule");
  }
  take_endpoints(record, connection);
  if (const nlohmann::json* at_exit = member(record, "open_at_exit"); at_exit != nullptr && *at_exit == true) {
    connection.open_at_exit = true;
  }
  if (const nlohmann::json* measured = member(record, "writes_measured"); measured != nullptr && *measured == false) {
    connection.writes_measured = false;
  }
  connection.duration_s = number_field(record, "duration_s");
  connection.writes = count_field(record, "writes");
  connection.bytes = count_field(record, "bytes");
  connection.write_errors = count_field(record, "write_errors");
  connection.heartbeats = count_field(record, "heartbeats");
  connection.idle_restart_count = count_field(record, "idle_restarts");
  if (const nlohmann::json* writes = member(record, "write_latency_us"); writes != nullptr) {
    connection.write_p50_us = number_field(*writes, "p50");
    connection.write_p99_us = number_field(*writes, "p99");
  }
  if (const nlohmann::json* acks = member(record, "ack_latency_us"); acks != nullptr) {
    connection.ack_count = count_field(*acks, "count");
    connection.ack_p50_us = number_field(*acks, "p50");
    connection.ack_p99_us = number_field(*acks, "p99");
  }
  if (const nlohmann::json* info = member(record, "tcp_info"); info != nullptr && info->is_object()) {
    connection.tcp_info = read_tcp_info(*info);
  }
}

// Both ends of one connection, when both logs were given: one's local is the other's peer.
void pair_ends(std::vector<ObservedConnection>& connections) {
  std::map<std::pair<std::string, std::string>, std::size_t> by_ends;
  for (std::size_t i = 0; i < connections.size(); ++i) {
    const ObservedConnection& connection = connections[i];
    if (!connection.local.empty() && !connection.peer.empty() && !connection.is_listener()) {
      by_ends.emplace(std::make_pair(connection.local, connection.peer), i);
    }
  }
  for (std::size_t i = 0; i < connections.size(); ++i) {
    ObservedConnection& connection = connections[i];
    if (connection.local.empty() || connection.peer.empty() || connection.is_listener()) {
      continue;
    }
    const auto found = by_ends.find({connection.peer, connection.local});
    if (found != by_ends.end() && found->second != i) {
      connection.counterpart = found->second;
    }
  }
}

// Whether a record naming `local` and `peer` can be of `connection`: an end either side does not
// know yet does not tell them apart.
bool same_ends(const ObservedConnection& connection, const std::string& local, const std::string& peer) {
  return (connection.local.empty() || !known_endpoint(local) || connection.local == local) &&
         (connection.peer.empty() || !known_endpoint(peer) || connection.peer == peer);
}

}  // namespace

const ObservedOption* ObservedConnection::option(const std::string& name) const {
  for (const ObservedOption& entry : options) {
    if (entry.name == name) {
      return &entry;
    }
  }
  return nullptr;
}

std::uint16_t ObservedConnection::service_port() const {
  if (role == "client") {
    return endpoint_port(peer);
  }
  if (role == "server" || role == "listener") {
    return endpoint_port(local);
  }
  return 0;
}

std::string ObservedConnection::peer_address() const {
  return peer.empty() ? std::string() : endpoint_address(peer);
}

double record_time_s(const std::string& ts) {
  std::tm parts{};
  double seconds = 0;
  if (std::sscanf(ts.c_str(), "%4d-%2d-%2dT%2d:%2d:%lf", &parts.tm_year, &parts.tm_mon, &parts.tm_mday, &parts.tm_hour,
                  &parts.tm_min, &seconds) != 6) {
    return 0;
  }
  parts.tm_year -= 1900;
  parts.tm_mon -= 1;
  parts.tm_sec = 0;
  return static_cast<double>(timegm(&parts)) + seconds;
}

std::uint16_t endpoint_port(const std::string& endpoint) {
  const auto colon = endpoint.rfind(':');
  if (colon == std::string::npos || colon + 1 == endpoint.size()) {
    return 0;
  }
  unsigned port = 0;
  for (std::size_t i = colon + 1; i < endpoint.size(); ++i) {
    const char digit = endpoint[i];
    if (digit < '0' || digit > '9' || port > 65535) {
      return 0;
    }
    port = port * 10 + static_cast<unsigned>(digit - '0');
  }
  return port <= 65535 ? static_cast<std::uint16_t>(port) : 0;
}

std::string endpoint_address(const std::string& endpoint) {
  const auto colon = endpoint.rfind(':');
  std::string address = colon == std::string::npos ? endpoint : endpoint.substr(0, colon);
  if (address.size() >= 2 && address.front() == '[' && address.back() == ']') {
    address = address.substr(1, address.size() - 2);
  }
  return address;
}

bool read_observations(const std::vector<std::string>& files, Observations& out, std::string& error) {
  // The connections each (pid, program, fd) names whose conn_close is not read yet, oldest first.
  // One descriptor's connections follow one another, but a conn_open is written by the thread that
  // connects, at once, and the rest by the shim's worker, later: a new connection's conn_open can
  // come before the close of the one the descriptor had before. The worker's records (writes, idle
  // restarts, closes) are in order, so they belong to the oldest; a close naming the ends of a
  // later one means the older ones' closes were lost.
  using Key = std::tuple<std::int64_t, std::string, std::int64_t>;
  std::map<Key, std::deque<std::size_t>> open;
  std::size_t file_index = 0;  // the file being read
  // A supervised accepted socket's records have no fd: its inode (as a negative number, apart from
  // the descriptors) tells it from the others.
  auto key_of = [](const nlohmann::json& record) {
    const std::int64_t socket = member(record, "fd") == nullptr && member(record, "inode") != nullptr
                                    ? -static_cast<std::int64_t>(count_field(record, "inode") & INT64_MAX)
                                    : static_cast<std::int64_t>(number_field(record, "fd"));
    return Key{static_cast<std::int64_t>(number_field(record, "pid")), string_field(record, "program"), socket};
  };
  auto new_connection = [&](const Key& key) -> std::size_t {
    ObservedConnection& connection = out.connections.emplace_back();
    connection.file = files[file_index];
    connection.pid = std::get<0>(key);
    connection.program = std::get<1>(key);
    connection.fd = std::get<2>(key);
    open[key].push_back(out.connections.size() - 1);
    return out.connections.size() - 1;
  };
  // The connection a worker's record is of, the oldest open one; `closes` takes it out.
  auto connection_for = [&](const nlohmann::json& record, bool closes) -> ObservedConnection& {
    const Key key = key_of(record);
    std::deque<std::size_t>& candidates = open[key];
    const std::string local = string_field(record, "local");
    const std::string peer = string_field(record, "peer");
    auto found = std::find_if(candidates.begin(), candidates.end(),
                              [&](std::size_t index) { return same_ends(out.connections[index], local, peer); });
    const std::size_t index = found != candidates.end() ? *found : new_connection(key);
    if (closes) {
      std::deque<std::size_t>& left = open[key];  // new_connection may have added to it
      left.erase(left.begin(), std::find(left.begin(), left.end(), index) + 1);
    }
    return out.connections[index];
  };
  const bool read = for_each_record(
      files,
      [&](const nlohmann::json* record) {
        if (record == nullptr) {
          ++out.skipped_lines;
          out.first_skipped_line.emplace(out.files.size() - 1, out.files.back().lines);
          return;
        }
        ++out.records;
        const std::string event = string_field(*record, "event");
        file_index = out.files.size() - 1;  // for_each_record adds each file before its lines
        if (event == "conn_open") {
          const Key key = key_of(*record);
          const std::size_t index = new_connection(key);
          read_open(*record, out.connections[index]);
          if (out.connections[index].is_listener()) {
            open[key].pop_back();  // a listener has no conn_close, and no record of the worker's
          }
        } else if (event == "conn_close") {
          read_close(*record, connection_for(*record, /*closes=*/true));
        } else if (event == "idle_restart") {
          ObservedIdleRestart restart;
          restart.idle_ms = number_field(*record, "idle_ms");
          restart.rto_ms = number_field(*record, "rto_ms");
          restart.rtt_ms = number_field(*record, "rtt_ms");
          restart.cwnd_before = count_field(*record, "cwnd_before");
          restart.cwnd_after = count_field(*record, "cwnd_after");
          restart.write_bytes = count_field(*record, "write_bytes");
          restart.extra_round_trips = count_field(*record, "extra_round_trips");
          restart.round_trips_known = member(*record, "extra_round_trips") != nullptr;
          connection_for(*record, /*closes=*/false).idle_restarts.push_back(restart);
        } else if (event == "write" || event == "slow_write") {
          ObservedWrite write;
          write.at_s = record_time_s(string_field(*record, "ts"));
          write.outcome = string_field(*record, "outcome");
          write.error = static_cast<int>(number_field(*record, "errno"));
          connection_for(*record, /*closes=*/false).write_records.push_back(write);
        }
      },
      out.files, error);
  pair_ends(out.connections);
  return read;
}

}  // namespace tcptune::cli
