#include "snapshot_pool.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <set>
#include <thread>
#include <vector>

#include "connection_stats.hpp"

namespace tcptune::telemetry {
namespace {

TEST(SnapshotPool, HandsOutEachItemOnceUntilReleased) {
  static SnapshotPool<int, 4> pool;
  std::set<int*> taken;
  for (int i = 0; i < 4; ++i) {
    int* item = pool.acquire();
    ASSERT_NE(item, nullptr);
    EXPECT_TRUE(taken.insert(item).second);
  }
  EXPECT_EQ(pool.acquire(), nullptr);  // exhausted: the caller drops and counts
  int* first = *taken.begin();
  pool.release(first);
  EXPECT_EQ(pool.acquire(), first);
  EXPECT_EQ(pool.acquire(), nullptr);
}

TEST(SnapshotPool, HoldsItsOwnItemsOnly) {
  static SnapshotPool<int, 2> pool;
  int* first = pool.acquire();
  int* second = pool.acquire();
  ASSERT_NE(first, nullptr);
  ASSERT_NE(second, nullptr);
  EXPECT_TRUE(pool.holds(first));
  EXPECT_TRUE(pool.holds(second));
  int elsewhere = 0;
  EXPECT_FALSE(pool.holds(&elsewhere));
  EXPECT_FALSE(pool.holds(second + 1));  // one past the last
}

TEST(SnapshotPool, ConcurrentAcquireAndReleaseNeverShareAnItem) {
  static SnapshotPool<std::atomic<int>, 64> pool;
  std::atomic<bool> shared{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 100000; ++i) {
        std::atomic<int>* item = pool.acquire();
        if (item == nullptr) {
          continue;
        }
        if (item->fetch_add(1) != 0) {
          shared = true;  // someone else holds it too
        }
        item->fetch_sub(1);
        pool.release(item);
      }
    });
  }
  for (auto& thread : threads) {
    thread.join();
  }
  EXPECT_FALSE(shared.load());
}

TEST(ConnectionStats, CountsOutcomesAndCarriesWrappedBuckets) {
  static ConnectionStats stats;
  stats.reset(1);
  stats.record_write(1000, 10, 100, 100, 0);
  stats.record_write(1000, 20, 40, 100, 0);       // partial
  stats.record_write(1000, 30, -1, 100, EAGAIN);  // would block
  stats.record_write(1000, 40, -1, 100, EPIPE);   // error
  EXPECT_EQ(stats.counters.writes.load(), 4U);
  EXPECT_EQ(stats.counters.bytes.load(), 140U);
  EXPECT_EQ(stats.counters.partial_writes.load(), 1U);
  EXPECT_EQ(stats.counters.would_block.load(), 1U);
  EXPECT_EQ(stats.counters.errors.load(), 1U);
  EXPECT_EQ(stats.last_write_end_ns.load(), 40);
  for (std::uint64_t i = 0; i < 2 * ConnectionWriteHistogram::kCarryUnit; ++i) {
    stats.record_write(5000, 50, 1, 1, 0);
  }
  LatencyHistogram merged;
  stats.write_latency_into(merged);
  EXPECT_EQ(merged.count(), 4 + 2 * ConnectionWriteHistogram::kCarryUnit);
  EXPECT_EQ(merged.bucket_count(HistogramLayout::bucket_of(5000)), 2 * ConnectionWriteHistogram::kCarryUnit);
  EXPECT_EQ(stats.carries.lost(), 0U);
  EXPECT_EQ(merged.min_ns(), 1000U);
  EXPECT_EQ(merged.max_ns(), 5000U);
}

}  // namespace
}  // namespace tcptune::telemetry
