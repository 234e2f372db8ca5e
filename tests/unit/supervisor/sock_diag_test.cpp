// sock_diag against the kernel: loopback connections found in the dump by the inode fstat gives,
// with their ports, state, TCP_INFO and congestion control.
#include "sock_diag.hpp"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstddef>
#include <string>
#include <thread>
#include <vector>

#include "loopback_connection.hpp"
#include "tcp_info_reader.hpp"
#include "tracked_connections.hpp"

namespace tcptune::supervisor {
namespace {

std::optional<SockDiag> open_diag() {
  std::string error;
  std::optional<SockDiag> diag = SockDiag::open(error);
  EXPECT_TRUE(diag.has_value()) << error;
  return diag;
}

std::vector<DiagSocket> dump_or_fail(SockDiag& diag, std::uint32_t states) {
  std::vector<DiagSocket> sockets;
  std::string error;
  EXPECT_TRUE(diag.dump(states, sockets, error)) << error;
  EXPECT_TRUE(error.empty()) << error;
  return sockets;
}

// Writes bytes from one end, reads them at the other, and waits until the writer's TCP_INFO says
// they are acknowledged (loopback acks at once, but not synchronously with read()).
void exchange(int writer, int reader, std::size_t count) {
  const std::vector<char> bytes(count, 'x');
  ASSERT_EQ(write(writer, bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
  std::vector<char> sink(count);
  std::size_t got = 0;
  while (got < count) {
    const ssize_t n = read(reader, sink.data() + got, count - got);
    ASSERT_GT(n, 0);
    got += static_cast<std::size_t>(n);
  }
  for (int i = 0; i < 200; ++i) {
    const auto info = shim::read_tcp_info(writer);
    ASSERT_TRUE(info.has_value());
    if (info->bytes_acked.value_or(0) >= count) {
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

TEST(SockDiag, FindsAnEstablishedLoopbackConnectionByInodeWithItsTcpInfo) {
  Loopback loopback;
  ASSERT_TRUE(loopback.open(AF_INET, "127.0.0.1", "127.0.0.1"));
  constexpr std::size_t kWritten = 100000;
  exchange(loopback.client, loopback.accepted, kWritten);

  std::optional<SockDiag> diag = open_diag();
  ASSERT_TRUE(diag.has_value());
  const std::vector<DiagSocket> sockets = dump_or_fail(*diag, kAllTcpStates);
  const DiagSocket* const client = find_by_inode(sockets, inode_of(loopback.client));
  const DiagSocket* const accepted = find_by_inode(sockets, inode_of(loopback.accepted));
  ASSERT_NE(client, nullptr);
  ASSERT_NE(accepted, nullptr);

  const std::uint16_t server_port = local_port(loopback.listener);
  const std::uint16_t client_port = local_port(loopback.client);
  EXPECT_EQ(client->local.family, 4);
  EXPECT_EQ(client->local.port, client_port);
  EXPECT_EQ(client->peer.port, server_port);
  EXPECT_EQ(client->peer.bytes[0], 127);
  EXPECT_EQ(accepted->local.port, server_port);
  EXPECT_EQ(accepted->peer.port, client_port);
  EXPECT_EQ(client->state, TCP_ESTABLISHED);
  EXPECT_EQ(accepted->state, TCP_ESTABLISHED);
  EXPECT_EQ(client->uid, getuid());

  std::uint64_t cookie = 0;
  socklen_t cookie_length = sizeof cookie;
  if (getsockopt(loopback.client, SOL_SOCKET, SO_COOKIE, &cookie, &cookie_length) == 0) {
    EXPECT_EQ(client->cookie, cookie);
  }
  EXPECT_NE(client->cookie, accepted->cookie);

  ASSERT_TRUE(client->info.has_value());
  EXPECT_EQ(client->info->state, TCP_ESTABLISHED);
  EXPECT_GT(client->info->rtt_us, 0U);
  EXPECT_GT(client->info->snd_cwnd, 0U);
  ASSERT_TRUE(client->info->bytes_acked.has_value());
  EXPECT_GE(*client->info->bytes_acked, kWritten);
  EXPECT_TRUE(client->info->delivery_rate_Bps.has_value());
  EXPECT_FALSE(client->congestion.empty());
  // The same congestion control TCP_CONGESTION reports on the descriptor.
  char name[16] = {};  // TCP_CA_NAME_MAX
  socklen_t name_length = sizeof name;
  ASSERT_EQ(getsockopt(loopback.client, IPPROTO_TCP, TCP_CONGESTION, name, &name_length), 0);
  EXPECT_EQ(client->congestion, std::string(name));
}

// Both read the kernel's tcp_info through decode_tcp_info: on a quiet connection they agree.
TEST(SockDiag, TcpInfoFromTheDumpMatchesReadTcpInfoOnTheDescriptor) {
  Loopback loopback;
  ASSERT_TRUE(loopback.open(AF_INET, "127.0.0.1", "127.0.0.1"));
  constexpr std::size_t kWritten = 30000;
  exchange(loopback.client, loopback.accepted, kWritten);
  std::optional<SockDiag> diag = open_diag();
  ASSERT_TRUE(diag.has_value());
  const std::vector<DiagSocket> sockets = dump_or_fail(*diag, kAllTcpStates);
  const std::optional<shim::TcpInfoSummary> direct = shim::read_tcp_info(loopback.client);
  const DiagSocket* const client = find_by_inode(sockets, inode_of(loopback.client));
  ASSERT_NE(client, nullptr);
  ASSERT_TRUE(client->info.has_value());
  ASSERT_TRUE(direct.has_value());
  EXPECT_EQ(client->info->state, direct->state);
  EXPECT_EQ(client->info->snd_mss, direct->snd_mss);
  EXPECT_EQ(client->info->total_retrans, direct->total_retrans);
  EXPECT_EQ(client->info->bytes_acked, direct->bytes_acked);
  EXPECT_EQ(client->info->notsent_bytes, direct->notsent_bytes);
  EXPECT_EQ(client->info->unacked, direct->unacked);
}

TEST(SockDiag, DumpsOnlyTheStatesAsked) {
  Loopback loopback;
  ASSERT_TRUE(loopback.open(AF_INET, "127.0.0.1", "127.0.0.1"));
  std::optional<SockDiag> diag = open_diag();
  ASSERT_TRUE(diag.has_value());

  const std::vector<DiagSocket> listening = dump_or_fail(*diag, tcp_state_bit(TCP_LISTEN));
  const DiagSocket* const listener = find_by_inode(listening, inode_of(loopback.listener));
  ASSERT_NE(listener, nullptr);
  EXPECT_EQ(listener->state, TCP_LISTEN);
  EXPECT_EQ(find_by_inode(listening, inode_of(loopback.client)), nullptr);
  for (const DiagSocket& socket : listening) {
    EXPECT_EQ(socket.state, TCP_LISTEN);
  }

  const std::vector<DiagSocket> connected = dump_or_fail(*diag, connected_tcp_states());
  EXPECT_EQ(find_by_inode(connected, inode_of(loopback.listener)), nullptr);
  EXPECT_NE(find_by_inode(connected, inode_of(loopback.client)), nullptr);
}

TEST(SockDiag, APortFilterKeepsTheSocketsOfItsPortsAndOnlyThem) {
  Loopback first;
  Loopback second;
  Loopback third;
  ASSERT_TRUE(first.open(AF_INET, "127.0.0.1", "127.0.0.1"));
  ASSERT_TRUE(second.open(AF_INET, "127.0.0.1", "127.0.0.1"));
  ASSERT_TRUE(third.open(AF_INET, "127.0.0.1", "127.0.0.1"));
  std::optional<SockDiag> diag = open_diag();
  ASSERT_TRUE(diag.has_value());

  // first: by its listener's port (the listener and the accepted socket have it as local port);
  // second: its client by its peer port (the listener's); third: neither.
  PortFilter filter;
  filter.local_ports = {local_port(first.listener)};
  filter.peer_ports = {local_port(second.listener)};
  std::vector<DiagSocket> sockets;
  std::string error;
  ASSERT_TRUE(diag->dump(connected_tcp_states() | tcp_state_bit(TCP_LISTEN), sockets, error, filter)) << error;
  EXPECT_NE(find_by_inode(sockets, inode_of(first.listener)), nullptr);
  EXPECT_NE(find_by_inode(sockets, inode_of(first.accepted)), nullptr);
  EXPECT_EQ(find_by_inode(sockets, inode_of(first.client)), nullptr);
  EXPECT_NE(find_by_inode(sockets, inode_of(second.client)), nullptr);
  EXPECT_EQ(find_by_inode(sockets, inode_of(second.listener)), nullptr);
  EXPECT_EQ(find_by_inode(sockets, inode_of(second.accepted)), nullptr);
  EXPECT_EQ(find_by_inode(sockets, inode_of(third.listener)), nullptr);
  EXPECT_EQ(find_by_inode(sockets, inode_of(third.client)), nullptr);
  for (const DiagSocket& socket : sockets) {
    EXPECT_TRUE(socket.local.port == filter.local_ports[0] || socket.peer.port == filter.peer_ports[0])
        << socket.local.port << " -> " << socket.peer.port;
  }
  // One port alone, and no filter: every one of them.
  sockets.clear();
  ASSERT_TRUE(diag->dump(tcp_state_bit(TCP_LISTEN), sockets, error, PortFilter{{local_port(third.listener)}, {}}))
      << error;
  ASSERT_EQ(sockets.size(), 1U);
  EXPECT_EQ(sockets[0].inode, inode_of(third.listener));
  const std::vector<DiagSocket> everything = dump_or_fail(*diag, connected_tcp_states());
  for (const Loopback* loopback : {&first, &second, &third}) {
    EXPECT_NE(find_by_inode(everything, inode_of(loopback->client)), nullptr);
    EXPECT_NE(find_by_inode(everything, inode_of(loopback->accepted)), nullptr);
  }
}

// Each socket comes with its own family (a dual-stack one's IPv4 ends notwithstanding), and a
// filter of one family dumps that family alone.
TEST(SockDiag, AFamilyFilterDumpsThatFamilyAlone) {
  Loopback ipv4;
  Loopback dual_stack;
  ASSERT_TRUE(ipv4.open(AF_INET, "127.0.0.1", "127.0.0.1"));
  if (!dual_stack.open(AF_INET6, "::", "::ffff:127.0.0.1")) {
    GTEST_SKIP() << "no dual-stack loopback here";
  }
  std::optional<SockDiag> diag = open_diag();
  ASSERT_TRUE(diag.has_value());
  std::string error;
  for (const unsigned families : {PortFilter::kInet, PortFilter::kInet6, PortFilter::kInet | PortFilter::kInet6}) {
    PortFilter filter;
    filter.families = families;
    std::vector<DiagSocket> sockets;
    ASSERT_TRUE(diag->dump(connected_tcp_states(), sockets, error, filter)) << error;
    const DiagSocket* const ipv4_client = find_by_inode(sockets, inode_of(ipv4.client));
    const DiagSocket* const dual_stack_client = find_by_inode(sockets, inode_of(dual_stack.client));
    EXPECT_EQ(ipv4_client != nullptr, (families & PortFilter::kInet) != 0) << families;
    EXPECT_EQ(dual_stack_client != nullptr, (families & PortFilter::kInet6) != 0) << families;
    if (dual_stack_client != nullptr) {
      EXPECT_EQ(dual_stack_client->family, AF_INET6);
      EXPECT_EQ(dual_stack_client->peer.family, 4) << "its ends are IPv4";
    }
    for (const DiagSocket& socket : sockets) {
      EXPECT_NE(families & (socket.family == AF_INET ? PortFilter::kInet : PortFilter::kInet6), 0U) << socket.family;
    }
  }
}

TEST(SockDiag, AClosedSocketLeavesTheInodesAndItsPeerGoesToCloseWait) {
  Loopback loopback;
  ASSERT_TRUE(loopback.open(AF_INET, "127.0.0.1", "127.0.0.1"));
  const std::uint64_t client_inode = inode_of(loopback.client);
  const std::uint64_t accepted_inode = inode_of(loopback.accepted);
  std::optional<SockDiag> diag = open_diag();
  ASSERT_TRUE(diag.has_value());
  ASSERT_NE(find_by_inode(dump_or_fail(*diag, kAllTcpStates), client_inode), nullptr);

  close(loopback.client);
  loopback.client = -1;
  const DiagSocket* peer = nullptr;
  std::vector<DiagSocket> sockets;
  for (int i = 0; i < 200; ++i) {
    sockets = dump_or_fail(*diag, kAllTcpStates);
    peer = find_by_inode(sockets, accepted_inode);
    if (peer != nullptr && peer->state == TCP_CLOSE_WAIT) {
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  // The closed end lingers in FIN_WAIT2 orphaned, with inode 0: by inode it is gone.
  EXPECT_EQ(find_by_inode(sockets, client_inode), nullptr);
  ASSERT_NE(peer, nullptr);
  EXPECT_EQ(peer->state, TCP_CLOSE_WAIT);
}

TEST(SockDiag, FindsIpv6AndGivesV4MappedAddressesAsIpv4) {
  Loopback v6;
  if (!v6.open(AF_INET6, "::1", "::1")) {
    GTEST_SKIP() << "no IPv6 loopback here";
  }
  std::optional<SockDiag> diag = open_diag();
  ASSERT_TRUE(diag.has_value());
  std::vector<DiagSocket> sockets = dump_or_fail(*diag, kAllTcpStates);
  const DiagSocket* const client = find_by_inode(sockets, inode_of(v6.client));
  ASSERT_NE(client, nullptr);
  EXPECT_EQ(client->local.family, 6);
  EXPECT_EQ(client->peer.family, 6);
  EXPECT_EQ(client->peer.bytes[15], 1);
  EXPECT_EQ(client->peer.port, local_port(v6.listener));
  EXPECT_TRUE(client->info.has_value());

  Loopback mapped;
  if (!mapped.open(AF_INET6, "::", "::ffff:127.0.0.1")) {
    GTEST_SKIP() << "no dual-stack IPv6 socket here";
  }
  sockets = dump_or_fail(*diag, kAllTcpStates);
  const DiagSocket* const mapped_client = find_by_inode(sockets, inode_of(mapped.client));
  ASSERT_NE(mapped_client, nullptr);
  EXPECT_EQ(mapped_client->peer.family, 4);
  EXPECT_EQ(mapped_client->peer.bytes[0], 127);
  EXPECT_EQ(mapped_client->peer.port, local_port(mapped.listener));
}

TEST(SockDiag, EachSocketOnceAcrossBothFamilies) {
  Loopback loopback;
  ASSERT_TRUE(loopback.open(AF_INET, "127.0.0.1", "127.0.0.1"));
  std::optional<SockDiag> diag = open_diag();
  ASSERT_TRUE(diag.has_value());
  const std::vector<DiagSocket> sockets = dump_or_fail(*diag, kAllTcpStates);
  const std::uint64_t inode = inode_of(loopback.client);
  std::size_t seen = 0;
  for (const DiagSocket& socket : sockets) {
    seen += socket.inode == inode ? 1 : 0;
  }
  EXPECT_EQ(seen, 1U);
}

// A buffer smaller than the kernel's datagrams: the first is cut with the dump still running in the
// kernel (which refuses the socket another until it ends), so the dump restarts on a new socket.
TEST(SockDiag, ADatagramLargerThanTheBufferGrowsItAndTheDumpStartsAgain) {
  std::vector<Loopback> connections(8);
  for (Loopback& loopback : connections) {
    ASSERT_TRUE(loopback.open(AF_INET, "127.0.0.1", "127.0.0.1"));
  }
  std::string error;
  std::optional<SockDiag> diag = SockDiag::open(error, 1024);
  ASSERT_TRUE(diag.has_value()) << error;
  for (int round = 0; round < 2; ++round) {
    const std::vector<DiagSocket> sockets = dump_or_fail(*diag, kAllTcpStates);
    for (const Loopback& loopback : connections) {
      for (const int fd : {loopback.listener, loopback.client, loopback.accepted}) {
        const std::uint64_t inode = inode_of(fd);
        std::size_t seen = 0;
        for (const DiagSocket& socket : sockets) {
          seen += socket.inode == inode ? 1 : 0;
        }
        EXPECT_EQ(seen, 1U) << "round " << round;
      }
    }
  }
  EXPECT_GT(diag->receive_buffer_size(), 1024U);
}

TEST(SockDiag, AMovedFromDumpFailsWithAReason) {
  std::optional<SockDiag> diag = open_diag();
  ASSERT_TRUE(diag.has_value());
  SockDiag moved = std::move(*diag);
  std::vector<DiagSocket> sockets;
  std::string error;
  EXPECT_FALSE(diag->dump(kAllTcpStates, sockets, error));  // NOLINT(bugprone-use-after-move): the case tested
  EXPECT_FALSE(error.empty());
  error.clear();
  EXPECT_TRUE(moved.dump(kAllTcpStates, sockets, error)) << error;
}

TEST(SockDiag, RepeatedDumpsOnOneSocketAgree) {
  Loopback loopback;
  ASSERT_TRUE(loopback.open(AF_INET, "127.0.0.1", "127.0.0.1"));
  std::optional<SockDiag> diag = open_diag();
  ASSERT_TRUE(diag.has_value());
  for (int i = 0; i < 20; ++i) {
    const std::vector<DiagSocket> sockets = dump_or_fail(*diag, kAllTcpStates);
    ASSERT_NE(find_by_inode(sockets, inode_of(loopback.client)), nullptr) << "dump " << i;
  }
}

// The supervisor's poll: a tracked connection's last TCP_INFO outlives the socket.
TEST(SockDiag, TrackedConnectionClosesWithItsLastTcpInfo) {
  Loopback loopback;
  ASSERT_TRUE(loopback.open(AF_INET, "127.0.0.1", "127.0.0.1"));
  constexpr std::size_t kWritten = 50000;
  exchange(loopback.client, loopback.accepted, kWritten);
  const std::uint64_t inode = inode_of(loopback.client);
  std::optional<SockDiag> diag = open_diag();
  ASSERT_TRUE(diag.has_value());
  TrackedConnections<int> tracked;
  ASSERT_TRUE(tracked.add(inode, 7));

  auto changes = tracked.update(dump_or_fail(*diag, connected_tcp_states()));
  EXPECT_TRUE(changes.closed.empty());
  ASSERT_NE(tracked.find(inode), nullptr);
  ASSERT_TRUE(tracked.find(inode)->last_seen.has_value());

  close(loopback.client);
  loopback.client = -1;
  changes = tracked.update(dump_or_fail(*diag, connected_tcp_states()));
  ASSERT_EQ(changes.closed.size(), 1U);
  EXPECT_EQ(changes.closed[0].inode, inode);
  EXPECT_EQ(changes.closed[0].metadata, 7);
  ASSERT_TRUE(changes.closed[0].last_seen.has_value());
  ASSERT_TRUE(changes.closed[0].last_seen->info.has_value());
  EXPECT_GE(changes.closed[0].last_seen->info->bytes_acked.value_or(0), kWritten);
  EXPECT_EQ(tracked.size(), 0U);
}

}  // namespace
}  // namespace tcptune::supervisor
