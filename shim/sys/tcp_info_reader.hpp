// The TCP_INFO fields telemetry reports, read with the kernel's own struct layout (glibc's
// <netinet/tcp.h> copy stops before tcpi_bytes_acked and tcpi_delivery_rate). A field the
// running kernel does not fill (a short optlen) is reported as absent.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

namespace tcptune::shim {

struct TcpInfoSummary {
  std::uint8_t state = 0;  // TCP_ESTABLISHED, TCP_CLOSE_WAIT, ... (<netinet/tcp.h>)
  std::uint32_t rtt_us = 0;
  std::uint32_t rttvar_us = 0;
  std::uint32_t rto_us = 0;
  std::uint32_t snd_cwnd = 0;
  std::uint32_t snd_mss = 0;
  std::uint32_t unacked = 0;
  std::uint32_t last_data_sent_ms = 0;
  std::uint32_t total_retrans = 0;
  std::optional<std::uint64_t> bytes_acked;        // Linux 4.1+
  std::optional<std::uint64_t> delivery_rate_Bps;  // Linux 4.9+, bytes per second
  std::optional<std::uint32_t> notsent_bytes;      // Linux 4.6+, written and not yet sent
  std::optional<std::uint32_t> min_rtt_us;         // Linux 4.6+, the smallest RTT seen: the path's floor
  std::optional<std::uint32_t> data_segs_out;      // Linux 4.6+, data segments sent, retransmissions included
  // Linux 4.10+ (the sender's chronographs), microseconds: sending data, and of that time held
  // back by the peer's receive window or by this socket's send buffer.
  std::optional<std::uint64_t> busy_us;
  std::optional<std::uint64_t> rwnd_limited_us;
  std::optional<std::uint64_t> sndbuf_limited_us;
};

// Through the next getsockopt; preserves errno. Async-signal-safe.
std::optional<TcpInfoSummary> read_tcp_info(int fd) noexcept;

// The kernel's struct tcp_info bytes, as TCP_INFO or sock_diag's INET_DIAG_INFO attribute return
// them: absent when shorter than the original struct (up to tcpi_total_retrans), each later field
// absent when the bytes stop before it. Pure; async-signal-safe.
std::optional<TcpInfoSummary> decode_tcp_info(const void* bytes, std::size_t length) noexcept;

}  // namespace tcptune::shim
