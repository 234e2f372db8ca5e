#include "fd_table.hpp"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

namespace tcptune::shim {
namespace {

TEST(FdTable, UnseenFdsHaveNoSlotUntilAsked) {
  FdTable table;
  EXPECT_EQ(table.find(5), nullptr);
  SocketSlot* slot = table.get(5);
  ASSERT_NE(slot, nullptr);
  EXPECT_EQ(slot->kind.load(), FdKind::unknown);
  EXPECT_EQ(table.find(5), slot);
  EXPECT_NE(table.find(6), nullptr);  // same chunk
  EXPECT_EQ(table.find(5000), nullptr);
}

TEST(FdTable, OutOfRangeFdsAreNotTracked) {
  FdTable table;
  EXPECT_EQ(table.get(-1), nullptr);
  EXPECT_EQ(table.get(FdTable::kMaxFd + 1), nullptr);
  EXPECT_NE(table.get(FdTable::kMaxFd), nullptr);
}

TEST(FdTable, RetireResetsStateAndBumpsGeneration) {
  FdTable table;
  SocketSlot* slot = table.get(7);
  slot->kind.store(FdKind::tcp);
  slot->rule_index.store(3);
  slot->held_rcvbuf.store(4096);
  slot->set_flag(flag_nodelay_forced);
  const auto generation = slot->generation.load();
  table.retire(7);
  EXPECT_EQ(slot->kind.load(), FdKind::unknown);
  EXPECT_EQ(slot->rule_index.load(), kRuleUnchosen);
  EXPECT_EQ(slot->held_rcvbuf.load(), kNoHeldBuffer);
  EXPECT_FALSE(slot->has_flag(flag_nodelay_forced));
  EXPECT_EQ(slot->generation.load(), generation + 1);
}

TEST(FdTable, RetireRangeSpansChunksAndSkipsMissingOnes) {
  FdTable table;
  for (int fd : {3, 1023, 1024, 5000, 9000}) {
    table.get(fd)->kind.store(FdKind::other);
  }
  table.retire_range(1000, 5000);
  EXPECT_EQ(table.find(3)->kind.load(), FdKind::other);
  EXPECT_EQ(table.find(1023)->kind.load(), FdKind::unknown);
  EXPECT_EQ(table.find(1024)->kind.load(), FdKind::unknown);
  EXPECT_EQ(table.find(5000)->kind.load(), FdKind::unknown);
  EXPECT_EQ(table.find(9000)->kind.load(), FdKind::other);
  table.retire_range(0, ~0U);
  EXPECT_EQ(table.find(3)->kind.load(), FdKind::unknown);
  EXPECT_EQ(table.find(9000)->kind.load(), FdKind::unknown);
}

TEST(FdTable, CopyCarriesRuleButNotCounters) {
  FdTable table;
  SocketSlot* source = table.get(10);
  source->kind.store(FdKind::tcp);
  source->rule_index.store(2);
  source->set_flag(flag_nodelay_forced);
  source->stats.counters.writes.store(9);
  table.copy(10, 11);
  const SocketSlot* copy = table.find(11);
  ASSERT_NE(copy, nullptr);
  EXPECT_EQ(copy->kind.load(), FdKind::tcp);
  EXPECT_EQ(copy->rule_index.load(), 2);
  EXPECT_TRUE(copy->has_flag(flag_nodelay_forced));
  EXPECT_EQ(copy->stats.counters.writes.load(), 0U);
}

TEST(FdTable, CopyOfUnknownLeavesTargetUnknown) {
  FdTable table;
  table.get(20)->kind.store(FdKind::tcp);
  table.copy(30, 20);  // dup2(unknown, 20): 20 now names something we have not classified
  EXPECT_EQ(table.find(20)->kind.load(), FdKind::unknown);
}

TEST(FdTable, ConcurrentGrowthInstallsOneChunk) {
  FdTable table;
  std::vector<SocketSlot*> seen(8);
  std::vector<std::thread> threads;
  for (std::size_t i = 0; i < seen.size(); ++i) {
    threads.emplace_back([&, i] { seen[i] = table.get(77777); });
  }
  for (auto& thread : threads) {
    thread.join();
  }
  for (SocketSlot* slot : seen) {
    EXPECT_EQ(slot, seen[0]);
  }
}

TEST(SocketSlot, FirstTimeFlagIsTrueOnce) {
  SocketSlot slot;
  EXPECT_TRUE(slot.set_flag_first_time(flag_veto_nodelay_logged));
  EXPECT_FALSE(slot.set_flag_first_time(flag_veto_nodelay_logged));
}

}  // namespace
}  // namespace tcptune::shim
