// A connection's ends kept beside its slot: read back only for the connection (slot generation)
// they were stored for, the first store of a connection standing; a client's pending conn_open
// taken once, and only by its own connection.
#include "connection_names.hpp"

#include <gtest/gtest.h>
#include <sys/socket.h>

#include <atomic>
#include <thread>
#include <vector>

#include "pending_open.hpp"
#include "socket_slot.hpp"

namespace tcptune::shim {
namespace {

config::Endpoint endpoint(int family, std::uint8_t last, std::uint16_t port) {
  config::Endpoint out;
  out.family = family;
  out.bytes[0] = family == 4 ? 192 : 0x20;
  out.bytes[family == 4 ? 3 : 15] = last;
  out.port = port;
  return out;
}

bool same(const config::Endpoint& a, const config::Endpoint& b) {
  return a.family == b.family && a.bytes == b.bytes && a.port == b.port;
}

TEST(ConnectionNames, ReadBackForTheirConnectionOnly) {
  ConnectionNames names;
  config::Endpoint local;
  config::Endpoint peer;
  EXPECT_FALSE(names.load(7, local, peer)) << "nothing stored yet";
  names.store(7, endpoint(4, 1, 51034), endpoint(6, 9, 443));
  ASSERT_TRUE(names.load(7, local, peer));
  EXPECT_TRUE(same(local, endpoint(4, 1, 51034)));
  EXPECT_TRUE(same(peer, endpoint(6, 9, 443)));
  EXPECT_FALSE(names.load(8, local, peer)) << "another connection on the same number";
}

TEST(ConnectionNames, TheFirstStoreOfAConnectionStands) {
  ConnectionNames names;
  names.store(3, endpoint(4, 1, 1000), endpoint(4, 2, 80));
  names.store(3, endpoint(4, 5, 5000), endpoint(4, 6, 81));  // a second thread completing the same connect
  config::Endpoint local;
  config::Endpoint peer;
  ASSERT_TRUE(names.load(3, local, peer));
  EXPECT_EQ(local.port, 1000);
  names.store(4, endpoint(4, 5, 5000), endpoint(4, 6, 81));  // the number's next connection
  ASSERT_TRUE(names.load(4, local, peer));
  EXPECT_EQ(local.port, 5000);
}

// Readers on other threads while connections come and go never see one connection's local end
// with another's peer.
TEST(ConnectionNames, ReadersNeverSeeAMixOfTwoStores) {
  ConnectionNames names;
  std::atomic<bool> done{false};
  std::atomic<int> mixed{0};
  std::atomic<int> read{0};
  std::vector<std::thread> readers;
  for (int i = 0; i < 2; ++i) {
    readers.emplace_back([&] {
      while (!done.load()) {
        for (std::uint32_t generation = 0; generation < 64; ++generation) {
          config::Endpoint local;
          config::Endpoint peer;
          if (names.load(generation, local, peer)) {
            read.fetch_add(1);
            if (local.port != generation + 1000 || peer.port != generation + 2000) {
              mixed.fetch_add(1);
            }
          }
        }
      }
    });
  }
  for (int round = 0; round < 20000; ++round) {
    const auto generation = static_cast<std::uint32_t>(round % 64);
    names.store(generation, endpoint(4, 1, static_cast<std::uint16_t>(generation + 1000)),
                endpoint(4, 2, static_cast<std::uint16_t>(generation + 2000)));
  }
  done.store(true);
  for (std::thread& reader : readers) {
    reader.join();
  }
  EXPECT_EQ(mixed.load(), 0) << read.load() << " reads";
}

TEST(PendingOpen, TakenOnceAndOnlyByItsConnection) {
  SocketSlot slot;
  auto* open = new PendingOpen;
  open->generation = 5;
  ASSERT_TRUE(park_pending_open(slot, open));
  EXPECT_EQ(take_pending_open(slot, 6), nullptr) << "another connection's";
  PendingOpen* taken = take_pending_open(slot, 5);
  EXPECT_EQ(taken, open);
  EXPECT_EQ(take_pending_open(slot, 5), nullptr) << "taken already";
  delete taken;
}

TEST(PendingOpen, ConnectErrorsByName) {
  EXPECT_EQ(connect_error_name(ECONNREFUSED), "ECONNREFUSED");
  EXPECT_EQ(connect_error_name(ETIMEDOUT), "ETIMEDOUT");
  EXPECT_EQ(connect_error_name(ENETUNREACH), "ENETUNREACH");
  EXPECT_EQ(connect_error_name(EMSGSIZE), "errno " + std::to_string(EMSGSIZE));
}

}  // namespace
}  // namespace tcptune::shim
