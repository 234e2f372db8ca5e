// What `tcptune advise` knows of each connection: its conn_open (options asked and got), its
// conn_close (counters, latencies, TCP_INFO), and the idle_restart and write records between, joined
// by process and descriptor across every log given (both ends of a connection, rotated files).
// Read through the records' documented JSON (docs/records-and-metrics.md).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "log_summary.hpp"

namespace tcptune::cli {

struct ObservedOption {
  std::string name;
  std::string requested;
  std::string effective;
  std::string note;
  std::string status;  // "capped", "refused", ... ; empty: applied, or a log from before the field
};

struct ObservedIdleRestart {
  double idle_ms = 0;
  double rto_ms = 0;
  double rtt_ms = 0;
  std::uint64_t cwnd_before = 0;
  std::uint64_t cwnd_after = 0;
  std::uint64_t write_bytes = 0;
  std::uint64_t extra_round_trips = 0;
  // false: a supervised record, seen between two polls without the write, so its size and the
  // round trips it cost are not known (docs/supervised.md)
  bool round_trips_known = true;
};

// A `write` or `slow_write` record: one write-family call.
struct ObservedWrite {
  double at_s = 0;  // the record's time, seconds since the epoch
  std::string outcome;
  int error = 0;  // errno, for outcome "error"
};

// The final TCP_INFO of a conn_close; each field absent when the record lacks it.
struct ObservedTcpInfo {
  std::optional<double> rtt_us;
  std::optional<double> min_rtt_us;
  std::optional<std::uint64_t> mss;
  std::optional<std::uint64_t> retransmits;
  std::optional<std::uint64_t> data_segs_out;
  std::optional<std::uint64_t> bytes_acked;
  std::optional<double> delivery_rate_bps;
  std::optional<double> busy_us;
  std::optional<double> rwnd_limited_us;
  std::optional<double> sndbuf_limited_us;
};

struct ObservedConnection {
  std::string file;  // the log its first record came from
  std::int64_t pid = 0;
  std::string program;
  std::int64_t fd = -1;
  std::string role;  // client, server, listener, unknown
  std::string rule;
  std::string phase;
  // "address:port" ("[v6]:port"), empty when no record of it names one (a preloaded client's
  // conn_open is written before connect; a supervised conn_close carries none).
  std::string local;
  std::string peer;
  std::vector<ObservedOption> options;
  bool opened = false;  // a conn_open was read
  bool closed = false;  // a conn_close was read
  bool open_at_exit = false;
  bool writes_measured = true;  // false: supervised, its writes unseen
  bool supervised = false;      // tuned from outside by tcptune's supervisor (no shim in the process)
  double opened_at_s = 0;
  double closed_at_s = 0;
  double duration_s = 0;
  std::uint64_t writes = 0;
  std::uint64_t bytes = 0;
  std::uint64_t write_errors = 0;
  std::uint64_t heartbeats = 0;
  std::uint64_t idle_restart_count = 0;  // from conn_close (records may have been dropped)
  double write_p50_us = 0;
  double write_p99_us = 0;
  std::uint64_t ack_count = 0;
  double ack_p50_us = 0;
  double ack_p99_us = 0;
  std::optional<ObservedTcpInfo> tcp_info;
  std::vector<ObservedIdleRestart> idle_restarts;
  std::vector<ObservedWrite> write_records;
  // The other end's connection, when its log was given too (index into Observations::connections).
  std::optional<std::size_t> counterpart;

  [[nodiscard]] const ObservedOption* option(const std::string& name) const;
  // The port that names the service: the peer's for a client, the local one for a server or
  // listener; 0 when unknown.
  [[nodiscard]] std::uint16_t service_port() const;
  // The peer's address without its port, empty when unknown.
  [[nodiscard]] std::string peer_address() const;
  [[nodiscard]] bool is_listener() const { return role == "listener"; }
};

struct Observations {
  std::vector<ObservedConnection> connections;
  std::vector<FileRead> files;
  std::uint64_t records = 0;
  std::uint64_t skipped_lines = 0;
  // By index in `files`: the number of its first line that is not a JSON record.
  std::map<std::size_t, std::uint64_t> first_skipped_line;
};

// Every log in order. Returns false (with the file in `error`) if one cannot be read.
bool read_observations(const std::vector<std::string>& files, Observations& out, std::string& error);

// "2026-12-02T15:21:23.563325Z" -> seconds since the epoch; 0 when it does not parse.
double record_time_s(const std::string& ts);
// "198.18.0.2:4000" -> 4000, "[::1]:80" -> 80; 0 when there is no port.
std::uint16_t endpoint_port(const std::string& endpoint);
// "198.18.0.2:4000" -> "198.18.0.2", "[::1]:80" -> "::1".
std::string endpoint_address(const std::string& endpoint);

}  // namespace tcptune::cli
