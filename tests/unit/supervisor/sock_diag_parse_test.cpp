// sock_diag's reply parsing on handmade messages, and decode_tcp_info on short and long structs.
// <linux/tcp.h> for the kernel's tcp_info; it cannot be included with <netinet/tcp.h>.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/sock_diag.h>
#include <linux/tcp.h>
#include <sys/socket.h>

#include <cstddef>
#include <cstring>
#include <optional>
#include <utility>
#include <vector>

#include "sock_diag.hpp"
#include "tcp_info_reader.hpp"

namespace tcptune::supervisor {
namespace {

constexpr std::uint8_t kEstablished = 1;  // TCP_ESTABLISHED, which <linux/tcp.h> does not name

// A whole reply message: header, inet_diag_msg, then the attributes given as (type, bytes).
std::vector<unsigned char> diag_message(const inet_diag_msg& diag,
                                        const std::vector<std::pair<int, std::vector<unsigned char>>>& attributes) {
  std::vector<unsigned char> message(NLMSG_HDRLEN + NLMSG_ALIGN(sizeof diag));
  std::memcpy(message.data() + NLMSG_HDRLEN, &diag, sizeof diag);
  for (const auto& [type, payload] : attributes) {
    const std::size_t at = message.size();
    message.resize(at + RTA_SPACE(payload.size()));
    rtattr attribute{static_cast<unsigned short>(RTA_LENGTH(payload.size())), static_cast<unsigned short>(type)};
    std::memcpy(message.data() + at, &attribute, sizeof attribute);
    std::memcpy(message.data() + at + RTA_LENGTH(0), payload.data(), payload.size());
  }
  nlmsghdr header{};
  header.nlmsg_len = static_cast<std::uint32_t>(message.size());
  header.nlmsg_type = SOCK_DIAG_BY_FAMILY;
  std::memcpy(message.data(), &header, sizeof header);
  return message;
}

inet_diag_msg sample_diag() {
  inet_diag_msg diag{};
  diag.idiag_family = AF_INET;
  diag.idiag_state = kEstablished;
  diag.idiag_inode = 4242;
  diag.idiag_uid = 1000;
  diag.id.idiag_sport = htons(40000);
  diag.id.idiag_dport = htons(443);
  diag.id.idiag_src[0] = htonl(0x0a000001);  // 10.0.0.1
  diag.id.idiag_dst[0] = htonl(0xcb007107);  // 203.0.113.7
  diag.id.idiag_cookie[0] = 0x11111111;
  diag.id.idiag_cookie[1] = 0x2;
  return diag;
}

TEST(SockDiagParse, ReadsTheMessageAndItsAttributes) {
  tcp_info info{};
  info.tcpi_state = kEstablished;
  info.tcpi_rtt = 1234;
  info.tcpi_snd_cwnd = 10;
  info.tcpi_bytes_acked = 99;
  std::vector<unsigned char> info_bytes(offsetof(tcp_info, tcpi_bytes_acked) + sizeof info.tcpi_bytes_acked);
  std::memcpy(info_bytes.data(), &info, info_bytes.size());
  const std::vector<unsigned char> message =
      diag_message(sample_diag(), {{INET_DIAG_CONG, {'b', 'b', 'r', '\0'}}, {INET_DIAG_INFO, info_bytes}});

  DiagSocket socket;
  ASSERT_TRUE(parse_diag_message(message.data(), message.size(), socket));
  EXPECT_EQ(socket.inode, 4242U);
  EXPECT_EQ(socket.cookie, 0x211111111U);
  EXPECT_EQ(socket.uid, 1000U);
  EXPECT_EQ(socket.state, kEstablished);
  EXPECT_EQ(config::format_endpoint(socket.local), "10.0.0.1:40000");
  EXPECT_EQ(config::format_endpoint(socket.peer), "203.0.113.7:443");
  EXPECT_EQ(socket.congestion, "bbr");
  ASSERT_TRUE(socket.info.has_value());
  EXPECT_EQ(socket.info->rtt_us, 1234U);
  EXPECT_EQ(socket.info->snd_cwnd, 10U);
  EXPECT_EQ(socket.info->bytes_acked, 99U);
  EXPECT_FALSE(socket.info->delivery_rate_Bps.has_value());  // the attribute stops before it
}

TEST(SockDiagParse, WithoutAttributesHasNoInfoAndARefusedShortMessage) {
  const std::vector<unsigned char> message = diag_message(sample_diag(), {});
  DiagSocket socket;
  socket.congestion = "stale";
  ASSERT_TRUE(parse_diag_message(message.data(), message.size(), socket));
  EXPECT_FALSE(socket.info.has_value());
  EXPECT_TRUE(socket.congestion.empty());
  EXPECT_FALSE(parse_diag_message(message.data(), NLMSG_HDRLEN + sizeof(inet_diag_msg) - 1, socket));
  EXPECT_FALSE(parse_diag_message(nullptr, message.size(), socket));
}

TEST(SockDiagParse, AnAttributeLongerThanTheMessageEndsTheAttributes) {
  std::vector<unsigned char> message = diag_message(sample_diag(), {{INET_DIAG_CONG, {'c', 'u', 'b', 'i', 'c', '\0'}}});
  // The attribute claims more bytes than the message holds.
  const std::size_t at = NLMSG_HDRLEN + NLMSG_ALIGN(sizeof(inet_diag_msg));
  const auto too_long = static_cast<unsigned short>(message.size());
  std::memcpy(message.data() + at, &too_long, sizeof too_long);
  DiagSocket socket;
  ASSERT_TRUE(parse_diag_message(message.data(), message.size(), socket));
  EXPECT_EQ(socket.inode, 4242U);
  EXPECT_TRUE(socket.congestion.empty());
}

TEST(DecodeTcpInfo, FieldsPastTheEndOfTheBytesAreAbsent) {
  tcp_info info{};
  info.tcpi_rtt = 500;
  info.tcpi_total_retrans = 3;
  info.tcpi_bytes_acked = 7;
  info.tcpi_delivery_rate = 8;
  info.tcpi_notsent_bytes = 9;

  // The struct up to tcpi_total_retrans (Linux 2.6): the base fields, no optional one.
  const std::size_t base = offsetof(tcp_info, tcpi_total_retrans) + sizeof info.tcpi_total_retrans;
  std::optional<shim::TcpInfoSummary> decoded = shim::decode_tcp_info(&info, base);
  ASSERT_TRUE(decoded.has_value());
  EXPECT_EQ(decoded->rtt_us, 500U);
  EXPECT_EQ(decoded->total_retrans, 3U);
  EXPECT_FALSE(decoded->bytes_acked.has_value());
  EXPECT_FALSE(decoded->delivery_rate_Bps.has_value());
  EXPECT_FALSE(decoded->notsent_bytes.has_value());

  // Up to tcpi_bytes_acked but one byte short of tcpi_delivery_rate's end.
  decoded = shim::decode_tcp_info(&info, offsetof(tcp_info, tcpi_delivery_rate) + sizeof info.tcpi_delivery_rate - 1);
  ASSERT_TRUE(decoded.has_value());
  EXPECT_EQ(decoded->bytes_acked, 7U);
  EXPECT_FALSE(decoded->delivery_rate_Bps.has_value());

  decoded = shim::decode_tcp_info(&info, sizeof info);
  ASSERT_TRUE(decoded.has_value());
  EXPECT_EQ(decoded->bytes_acked, 7U);
  EXPECT_EQ(decoded->delivery_rate_Bps, 8U);
  EXPECT_EQ(decoded->notsent_bytes, 9U);
}

// The sender's chronographs (Linux 4.10) come whole or not at all; min_rtt and data_segs_out (4.6).
TEST(DecodeTcpInfo, ChronographsAndMinRtt) {
  tcp_info info{};
  info.tcpi_min_rtt = 20000;
  info.tcpi_data_segs_out = 300;
  info.tcpi_busy_time = 5000000;
  info.tcpi_rwnd_limited = 4000000;
  info.tcpi_sndbuf_limited = 10000;
  std::optional<shim::TcpInfoSummary> decoded =
      shim::decode_tcp_info(&info, offsetof(tcp_info, tcpi_sndbuf_limited) + sizeof info.tcpi_sndbuf_limited - 1);
  ASSERT_TRUE(decoded.has_value());
  EXPECT_EQ(decoded->min_rtt_us, 20000U);
  EXPECT_EQ(decoded->data_segs_out, 300U);
  EXPECT_FALSE(decoded->busy_us.has_value());
  EXPECT_FALSE(decoded->rwnd_limited_us.has_value());
  decoded = shim::decode_tcp_info(&info, sizeof info);
  ASSERT_TRUE(decoded.has_value());
  EXPECT_EQ(decoded->busy_us, 5000000U);
  EXPECT_EQ(decoded->rwnd_limited_us, 4000000U);
  EXPECT_EQ(decoded->sndbuf_limited_us, 10000U);
  decoded = shim::decode_tcp_info(&info, offsetof(tcp_info, tcpi_min_rtt));
  ASSERT_TRUE(decoded.has_value());
  EXPECT_FALSE(decoded->min_rtt_us.has_value());
}

TEST(DecodeTcpInfo, BytesShorterThanTheOriginalStructAreNoTcpInfo) {
  const tcp_info info{};
  EXPECT_FALSE(shim::decode_tcp_info(&info, offsetof(tcp_info, tcpi_total_retrans)).has_value());
  EXPECT_FALSE(shim::decode_tcp_info(&info, 0).has_value());
  EXPECT_FALSE(shim::decode_tcp_info(nullptr, sizeof info).has_value());
}

TEST(DecodeTcpInfo, ALongerStructFromANewerKernelIsRead) {
  std::vector<unsigned char> bytes(sizeof(tcp_info) + 64, 0xff);
  tcp_info info{};
  info.tcpi_rtt = 77;
  std::memcpy(bytes.data(), &info, sizeof info);
  const std::optional<shim::TcpInfoSummary> decoded = shim::decode_tcp_info(bytes.data(), bytes.size());
  ASSERT_TRUE(decoded.has_value());
  EXPECT_EQ(decoded->rtt_us, 77U);
}

}  // namespace
}  // namespace tcptune::supervisor
