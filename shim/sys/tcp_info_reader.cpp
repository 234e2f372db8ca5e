#include "tcp_info_reader.hpp"

#include <linux/tcp.h>
#include <netinet/in.h>

#include <algorithm>
#include <cstddef>
#include <cstring>

#include "errno_saver.hpp"
#include "socket_calls.hpp"

namespace tcptune::shim {

std::optional<TcpInfoSummary> read_tcp_info(int fd) noexcept {
  const ErrnoSaver saver;
  tcp_info info{};
  socklen_t length = sizeof info;
  if (core_getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &length) != 0) {
    return std::nullopt;
  }
  return decode_tcp_info(&info, length);
}

std::optional<TcpInfoSummary> decode_tcp_info(const void* bytes, std::size_t length) noexcept {
  // Every kernel since 2.6 fills at least up to tcpi_total_retrans; less is not a tcp_info.
  if (bytes == nullptr || length < offsetof(tcp_info, tcpi_total_retrans) + sizeof(tcp_info::tcpi_total_retrans)) {
    return std::nullopt;
  }
  // A newer kernel's longer struct is cut to the one compiled against; the bytes may be unaligned.
  tcp_info info{};
  std::memcpy(&info, bytes, std::min(length, sizeof info));
  const auto has = [&](std::size_t offset, std::size_t size) { return length >= offset + size; };
  TcpInfoSummary out;
  out.state = info.tcpi_state;
  out.rtt_us = info.tcpi_rtt;
  out.rttvar_us = info.tcpi_rttvar;
  out.rto_us = info.tcpi_rto;
  out.snd_cwnd = info.tcpi_snd_cwnd;
  out.snd_mss = info.tcpi_snd_mss;
  out.unacked = info.tcpi_unacked;
  out.last_data_sent_ms = info.tcpi_last_data_sent;
  out.total_retrans = info.tcpi_total_retrans;
  if (has(offsetof(tcp_info, tcpi_bytes_acked), sizeof info.tcpi_bytes_acked)) {
    out.bytes_acked = info.tcpi_bytes_acked;
  }
  if (has(offsetof(tcp_info, tcpi_delivery_rate), sizeof info.tcpi_delivery_rate)) {
    out.delivery_rate_Bps = info.tcpi_delivery_rate;
  }
  if (has(offsetof(tcp_info, tcpi_notsent_bytes), sizeof info.tcpi_notsent_bytes)) {
    out.notsent_bytes = info.tcpi_notsent_bytes;
  }
  if (has(offsetof(tcp_info, tcpi_min_rtt), sizeof info.tcpi_min_rtt)) {
    out.min_rtt_us = info.tcpi_min_rtt;
  }
  if (has(offsetof(tcp_info, tcpi_data_segs_out), sizeof info.tcpi_data_segs_out)) {
    out.data_segs_out = info.tcpi_data_segs_out;
  }
  if (has(offsetof(tcp_info, tcpi_sndbuf_limited), sizeof info.tcpi_sndbuf_limited)) {
    out.busy_us = info.tcpi_busy_time;
    out.rwnd_limited_us = info.tcpi_rwnd_limited;
    out.sndbuf_limited_us = info.tcpi_sndbuf_limited;
  }
  return out;
}

}  // namespace tcptune::shim
