// TrackedConnections on handmade dumps: closes, state changes, connections never seen, and an inode
// that comes back naming another socket.
#include "tracked_connections.hpp"

#include <gtest/gtest.h>
#include <netinet/tcp.h>

#include <string>
#include <vector>

namespace tcptune::supervisor {
namespace {

DiagSocket entry(std::uint64_t inode, std::uint8_t state, std::uint32_t rtt_us = 100, std::uint64_t cookie = 0) {
  DiagSocket socket;
  socket.inode = inode;
  socket.cookie = cookie == 0 ? inode * 1000 : cookie;
  socket.state = state;
  shim::TcpInfoSummary info;
  info.state = state;
  info.rtt_us = rtt_us;
  socket.info = info;
  return socket;
}

TEST(TrackedConnections, AConnectionSeenThenGoneClosesWithTheLastInfoSeen) {
  TrackedConnections<std::string> tracked;
  ASSERT_TRUE(tracked.add(11, "first"));
  ASSERT_TRUE(tracked.add(12, "second"));
  auto changes = tracked.update({entry(11, TCP_ESTABLISHED, 100), entry(12, TCP_ESTABLISHED), entry(99, TCP_LISTEN)});
  EXPECT_TRUE(changes.closed.empty());
  changes = tracked.update({entry(11, TCP_ESTABLISHED, 250), entry(12, TCP_ESTABLISHED)});
  EXPECT_TRUE(changes.closed.empty());

  changes = tracked.update({entry(12, TCP_ESTABLISHED)});
  ASSERT_EQ(changes.closed.size(), 1U);
  EXPECT_EQ(changes.closed[0].inode, 11U);
  EXPECT_EQ(changes.closed[0].metadata, "first");
  ASSERT_TRUE(changes.closed[0].last_seen.has_value());
  ASSERT_TRUE(changes.closed[0].last_seen->info.has_value());
  EXPECT_EQ(changes.closed[0].last_seen->info->rtt_us, 250U);
  EXPECT_EQ(tracked.find(11), nullptr);
  EXPECT_NE(tracked.find(12), nullptr);
  EXPECT_EQ(tracked.size(), 1U);
}

TEST(TrackedConnections, ReportsStateChanges) {
  TrackedConnections<int> tracked;
  ASSERT_TRUE(tracked.add(5, 0));
  ASSERT_TRUE(tracked.add(3, 0));
  auto changes = tracked.update({entry(5, TCP_SYN_SENT), entry(3, TCP_ESTABLISHED)});
  EXPECT_TRUE(changes.state_changes.empty());  // the first sighting is no change
  changes = tracked.update({entry(5, TCP_ESTABLISHED), entry(3, TCP_CLOSE_WAIT)});
  ASSERT_EQ(changes.state_changes.size(), 2U);
  EXPECT_EQ(changes.state_changes[0].inode, 3U);
  EXPECT_EQ(changes.state_changes[0].from, TCP_ESTABLISHED);
  EXPECT_EQ(changes.state_changes[0].to, TCP_CLOSE_WAIT);
  EXPECT_EQ(changes.state_changes[1].inode, 5U);
  EXPECT_EQ(changes.state_changes[1].from, TCP_SYN_SENT);
  EXPECT_EQ(changes.state_changes[1].to, TCP_ESTABLISHED);
  changes = tracked.update({entry(5, TCP_ESTABLISHED), entry(3, TCP_CLOSE_WAIT)});
  EXPECT_TRUE(changes.state_changes.empty());
}

TEST(TrackedConnections, AConnectionNeverSeenIsGivenUpAfterTheLimit) {
  TrackedConnections<int> tracked(3);
  ASSERT_TRUE(tracked.add(8, 1));
  EXPECT_TRUE(tracked.update({}).closed.empty());
  EXPECT_TRUE(tracked.update({}).closed.empty());
  ASSERT_NE(tracked.find(8), nullptr);
  EXPECT_EQ(tracked.find(8)->unseen_updates, 2U);
  const auto changes = tracked.update({});
  ASSERT_EQ(changes.closed.size(), 1U);
  EXPECT_EQ(changes.closed[0].inode, 8U);
  EXPECT_FALSE(changes.closed[0].last_seen.has_value());
}

TEST(TrackedConnections, ALateFirstSightingResetsTheUnseenCount) {
  TrackedConnections<int> tracked(2);
  ASSERT_TRUE(tracked.add(8, 1));
  EXPECT_TRUE(tracked.update({}).closed.empty());
  EXPECT_TRUE(tracked.update({entry(8, TCP_ESTABLISHED)}).closed.empty());
  ASSERT_NE(tracked.find(8), nullptr);
  EXPECT_EQ(tracked.find(8)->unseen_updates, 0U);
  // Once seen, one dump without it closes it.
  EXPECT_EQ(tracked.update({}).closed.size(), 1U);
}

TEST(TrackedConnections, AnInodeNamingAnotherSocketClosesTheTrackedOne) {
  TrackedConnections<int> tracked;
  ASSERT_TRUE(tracked.add(21, 0));
  EXPECT_TRUE(tracked.update({entry(21, TCP_ESTABLISHED, 100, 777)}).closed.empty());
  const auto changes = tracked.update({entry(21, TCP_ESTABLISHED, 100, 778)});
  ASSERT_EQ(changes.closed.size(), 1U);
  EXPECT_EQ(changes.closed[0].last_seen->cookie, 777U);
  EXPECT_EQ(tracked.size(), 0U);
}

TEST(TrackedConnections, AddRefusesInodeZeroAndADuplicate) {
  TrackedConnections<std::string> tracked;
  EXPECT_FALSE(tracked.add(0, "none"));
  EXPECT_TRUE(tracked.add(4, "kept"));
  EXPECT_FALSE(tracked.add(4, "other"));
  ASSERT_NE(tracked.find(4), nullptr);
  EXPECT_EQ(tracked.find(4)->metadata, "kept");
  const auto removed = tracked.remove(4);
  ASSERT_TRUE(removed.has_value());
  EXPECT_EQ(removed->metadata, "kept");
  EXPECT_FALSE(tracked.remove(4).has_value());
  EXPECT_EQ(tracked.size(), 0U);
}

TEST(TrackedConnections, EntriesWithInodeZeroMatchNothing) {
  TrackedConnections<int> tracked;
  ASSERT_TRUE(tracked.add(6, 0));
  EXPECT_TRUE(tracked.update({entry(6, TCP_ESTABLISHED)}).closed.empty());
  // The same connection orphaned by close(): inode 0 in the dump.
  EXPECT_EQ(tracked.update({entry(0, TCP_FIN_WAIT1)}).closed.size(), 1U);
}

}  // namespace
}  // namespace tcptune::supervisor
