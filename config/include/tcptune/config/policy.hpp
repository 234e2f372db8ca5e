// The policy as pure data: what the TOML file says, validated and with units resolved.
// Nothing here knows about file descriptors or the kernel.
#pragma once

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tcptune::config {

using Duration = std::chrono::nanoseconds;

// Where a value came from, for messages ("policy.toml:12:5").
struct SourcePos {
  std::string file;
  std::uint32_t line = 0;
  std::uint32_t column = 0;
  bool operator==(const SourcePos&) const = default;
};

enum class NodelayMode {
  keep,   // leave the app and the kernel alone
  on,     // set TCP_NODELAY; the app may turn it off again
  force,  // set TCP_NODELAY and veto the app's TCP_NODELAY=0 and TCP_CORK
  off,    // clear TCP_NODELAY (Nagle on)
  // Nagle stays on; what it holds back on a socket a thread wrote to is pushed out (TCP_NODELAY
  // set and cleared) when that thread turns to wait for input: read, recv, poll, epoll, select.
  on_wait,
};

enum class Role { any, client, server };

// An address prefix. IPv4 prefixes are stored as IPv4 (family 4); a v4-mapped
// IPv6 peer is matched against them after unmapping.
struct Cidr {
  int family = 4;                        // 4 or 6
  std::array<std::uint8_t, 16> bytes{};  // network byte order, first 4 used for v4
  int prefix_len = 0;
  bool operator==(const Cidr&) const = default;
};

struct PortRange {
  std::uint16_t first = 0;
  std::uint16_t last = 0;
  bool operator==(const PortRange&) const = default;
};

struct Match {
  std::vector<Cidr> peers;       // empty: any peer
  std::vector<PortRange> ports;  // peer port for clients, local port for servers; empty: any
  Role role = Role::any;
  std::vector<std::string> programs;  // globs on the program name; empty: any
  bool operator==(const Match&) const = default;
};

// Socket buffer sizing: either from a bandwidth-delay product or explicit sizes.
struct BufferSpec {
  std::optional<std::uint64_t> bandwidth_bytes_per_s;
  std::optional<Duration> rtt;  // unset with rtt_auto: measured once established
  bool rtt_auto = false;
  std::optional<std::uint64_t> sndbuf;  // explicit sizes, bytes as given to setsockopt
  std::optional<std::uint64_t> rcvbuf;
  bool operator==(const BufferSpec&) const = default;
};

struct Keepalive {
  Duration idle{};
  Duration interval{};
  int count = 0;
  bool operator==(const Keepalive&) const = default;
};

// A raw setsockopt the policy asks for: `sockopt = [{level=..., name=..., value=...}]`.
struct RawSockopt {
  int level = 0;
  int name = 0;
  int value = 0;
  std::string level_name;
  std::string option_name;
  bool operator==(const RawSockopt&) const = default;
};

// Which end of a connection may send a keep_warm heartbeat. A protocol's no-op is often valid in
// one direction only: an HTTP/1.1 server skips CRLF before a request line, but a client reading a
// response does not.
enum class HeartbeatSide : std::uint8_t {
  both,
  client,  // connections the program opens (connect)
  server,  // connections the program accepts
};

// How keep-warm knows where the app's messages end, so that a heartbeat never lands inside one.
// A protocol preset follows the protocol's own framing over the bytes the app writes (the
// shim's message_framer); raw heartbeat bytes can only guess: a write call that returns whole
// is taken to end a message, which a relay or streaming proxy, forwarding a message in parts as
// it arrives, defeats.
enum class Framing : std::uint8_t {
  guessed,        // raw `heartbeat`/`heartbeat_hex`: a whole write ends a message
  lines,          // a message ends with '\n'
  http1_request,  // HTTP/1.1 requests: head, then a Content-Length or chunked body
  resp_request,   // Redis commands: RESP arrays of bulk strings, or inline lines
  stomp,          // STOMP frames: headers, then a content-length body or one ending at NUL
  amqp091,        // AMQP 0-9-1: the protocol header, then frames of declared size ending in 0xCE
};

// In-band heartbeats that keep an idle connection's congestion window from restarting
// (tcp_slow_start_after_idle): `keep_warm = { heartbeat = "\n", interval = "auto" }`, or a
// protocol's own no-op by name: `keep_warm = { protocol = "http1-client" }`.
struct KeepWarm {
  std::string payload;                           // bytes the peer's protocol ignores between messages, 1..64
  std::string protocol;                          // the preset's name; empty when the policy gave the bytes
  HeartbeatSide side = HeartbeatSide::both;      // a preset's; explicit bytes leave it to the rule's match
  Framing framing = Framing::guessed;            // a preset's; explicit bytes can only guess
  std::optional<Duration> interval;              // unset: "auto", the connection's RTO less a margin
  Duration max_idle = std::chrono::seconds(60);  // stop once the app has written nothing this long
  bool operator==(const KeepWarm&) const = default;
};

// Every tunable. Unset means "do not touch"; a rule's unset keys inherit [defaults].
struct Tuning {
  std::optional<NodelayMode> nodelay;
  std::optional<BufferSpec> buffers;
  std::optional<bool> override_app_buffers;
  std::optional<std::string> congestion;
  std::optional<Keepalive> keepalive;
  std::optional<Duration> user_timeout;
  std::optional<std::uint32_t> notsent_lowat;
  std::optional<bool> thin_linear_timeouts;
  std::optional<bool> quickack;
  std::optional<bool> callsite;  // record where connections open and slow writes stall
  std::optional<int> tos;
  std::optional<KeepWarm> keep_warm;
  std::vector<RawSockopt> sockopts;
  bool operator==(const Tuning&) const = default;
};

struct Rule {
  std::string name;
  Match match;
  Tuning tuning;     // as written in the rule
  Tuning effective;  // [defaults] overlaid with the rule: what the shim applies
  SourcePos pos;
  bool operator==(const Rule&) const = default;
};

enum class LogLevel { trace, debug, info, warn, error, off };

enum class LogFormat { text, jsonl };

struct LogSettings {
  std::string path;  // may contain {pid} and {program}; "stderr": the process's own; empty: no log
  LogLevel level = LogLevel::info;
  LogFormat format = LogFormat::jsonl;
  std::string prometheus_textfile;               // may contain {pid} and {program}; empty: none
  Duration interval = std::chrono::seconds(10);  // how often the textfile is rewritten
  std::optional<Duration> slow_write;            // a slow_write record for writes at least this long
  bool trace_writes = false;                     // one record per write (debugging)
  std::uint64_t rotate_size = 0;                 // bytes before the log is rotated; 0: never
  int keep = 5;                                  // rotated files kept (FILE.1 .. FILE.keep)
  bool callsite = false;                         // call sites for every rule that does not say
  bool summary = true;                           // conn_close records and the summary at exit
  bool operator==(const LogSettings&) const = default;
};

// The most [[rule]]s a policy may have. The shim keeps a socket's rule index in an int16_t
// (and static_asserts this bound against it), and walks the rules at every connect and accept.
inline constexpr std::size_t kMaxRules = 4096;

struct Policy {
  int version = 1;
  std::string source;  // file path, "TCPTUNE_POLICY_TOML", or "built-in default"
  Tuning defaults;
  LogSettings log;
  std::vector<Rule> rules;
  bool operator==(const Policy&) const = default;
};

// The policy used when none is found: TCP_NODELAY on for every TCP socket, nothing else.
Policy builtin_default_policy();

// "heartbeat of 1 byte ("\n") after ... without data sent; stops after ..." for `tcptune check`
// and the conn_open record.
std::string describe_keep_warm(const KeepWarm& keep_warm);

// Why a connection on `socket_side` must not send `keep_warm`'s heartbeats, or nullopt when it
// may. `socket_side` is Role::client for a socket the program connect()ed, Role::server for an
// accepted one, Role::any when the shim cannot tell (a connected socket it adopted).
std::optional<std::string> heartbeat_side_refusal(const KeepWarm& keep_warm, Role socket_side);

// Overlay: every key set in `rule` replaces the one in `base`; sockopts are appended.
Tuning overlay(const Tuning& base, const Tuning& rule);

}  // namespace tcptune::config
