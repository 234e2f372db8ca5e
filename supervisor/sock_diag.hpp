// The TCP sockets of the caller's network namespace, from sock_diag netlink (inet_diag), with each
// one's TCP_INFO and congestion control. No privilege is needed, and no descriptor of the sockets:
// the supervisor closes its duplicates at once (holding one would delay the peer's EOF) and finds
// the sockets again here by inode.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tcp_info_reader.hpp"
#include "tcptune/config/cidr.hpp"

namespace tcptune::supervisor {

struct DiagSocket {
  // sockfs inode, as fstat's st_ino on any descriptor of the socket. 0 once no process holds the
  // socket (closed and orphaned in FIN_WAIT or LAST_ACK) and for TIME_WAIT and SYN_RECV entries.
  std::uint64_t inode = 0;
  std::uint64_t cookie = 0;  // getsockopt(SO_COOKIE): unique in the boot, never reused
  config::Endpoint local;
  config::Endpoint peer;
  int family = 0;          // the socket's own, AF_INET or AF_INET6 (whose v4-mapped ends are IPv4 here)
  std::uint8_t state = 0;  // TCP_ESTABLISHED, TCP_CLOSE_WAIT, ... (<netinet/tcp.h>)
  std::uint32_t uid = 0;
  std::optional<shim::TcpInfoSummary> info;  // absent for TIME_WAIT and SYN_RECV entries
  std::string congestion;                    // "cubic", "bbr", ...; empty where the kernel gave none
};

// A state set for dump(): one bit per TCP state (TCP_ESTABLISHED, ... in <netinet/tcp.h>, which
// this header leaves out: it cannot be included with <linux/tcp.h>, which has the kernel's tcp_info).
constexpr std::uint32_t tcp_state_bit(int state) {
  return std::uint32_t{1} << state;
}
constexpr std::uint32_t kAllTcpStates = 0xfff;
// The states a socket can be in while a process holds it, connecting or connected (no LISTEN,
// TIME_WAIT, SYN_RECV): the ones a supervisor polls.
std::uint32_t connected_tcp_states();

// Which sockets a dump returns: those whose local port is one of `local_ports` or whose peer port
// is one of `peer_ports`, judged by the kernel (an inet_diag bytecode filter: the others are never
// filled in, copied or parsed, which on a host with many connections is most of a dump's cost).
// Both empty: every socket. Only sockets of the families in `families` (each dump of a family walks
// the host's whole table of connections, about a millisecond for 256 Ki buckets).
struct PortFilter {
  static constexpr unsigned kInet = 1;
  static constexpr unsigned kInet6 = 2;
  std::vector<std::uint16_t> local_ports;
  std::vector<std::uint16_t> peer_ports;
  unsigned families = kInet | kInet6;
  [[nodiscard]] bool empty() const noexcept { return local_ports.empty() && peer_ports.empty(); }
};

// The inet_diag bytecode of `filter`: one port test per port, joined by "or" (each test that
// holds jumps to the end, which accepts; the last that fails jumps past it, which refuses). Pure.
std::vector<unsigned char> port_filter_bytecode(const PortFilter& filter);

// One NETLINK_SOCK_DIAG socket (close-on-exec). Movable, not copyable; not for two threads at once.
class SockDiag {
 public:
  // The receive buffer grows by itself when a datagram does not fit; its start is a test's seam.
  static std::optional<SockDiag> open(std::string& error, std::size_t receive_buffer = std::size_t{64} * 1024);

  SockDiag(SockDiag&& other) noexcept;
  SockDiag& operator=(SockDiag&& other) noexcept;
  SockDiag(const SockDiag&) = delete;
  SockDiag& operator=(const SockDiag&) = delete;
  ~SockDiag();

  // Every TCP socket (AF_INET, then AF_INET6: a dual-stack socket once, as AF_INET6 with its
  // v4-mapped addresses made IPv4) of the families and in the given states `filter` takes, appended to out. A
  // kernel that refuses the filter (before 4.16, no port equality) gets dumps without one from
  // then on, which return more, never less. On false, error is one line and out may hold part of
  // the sockets.
  bool dump(std::uint32_t states, std::vector<DiagSocket>& out, std::string& error,
            const PortFilter& filter = {}) noexcept;

  std::size_t receive_buffer_size() const { return buffer_.size(); }

 private:
  enum class DumpOutcome { kDone, kTruncated, kFailed, kFilterRefused };

  explicit SockDiag(int fd) : fd_(fd) {}
  DumpOutcome dump_family(int family, std::uint32_t states, const std::vector<unsigned char>& bytecode,
                          std::vector<DiagSocket>& out, std::string& error);
  bool replace_socket(std::string& error);

  int fd_ = -1;
  bool abandoned_ = false;  // a dump on fd_ was left before its end
  std::uint32_t sequence_ = 0;
  bool filter_refused_ = false;  // the kernel refused a port filter: none from then on
  std::vector<unsigned char> buffer_;
};

// Parses one SOCK_DIAG_BY_FAMILY reply message (inet_diag_msg and its attributes), the whole
// netlink message from its nlmsghdr. False when it is too short to be one. Pure.
bool parse_diag_message(const void* message, std::size_t length, DiagSocket& out);

// The socket with this inode, or nullptr (inode 0 is never found: it names no socket).
const DiagSocket* find_by_inode(const std::vector<DiagSocket>& sockets, std::uint64_t inode);

}  // namespace tcptune::supervisor
