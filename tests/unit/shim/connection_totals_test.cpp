// The worker's sums: closed connections by rule, and counts the app's threads hand over
// lock-free when a record is lost or a write returns after its close.
#include "connection_totals.hpp"

#include <gtest/gtest.h>

#include <cerrno>
#include <deque>

namespace tcptune::shim {
namespace {

// The snapshot of a connection that wrote `writes` times, each taking `latency_ns`; its
// histogram lives as long as the test.
ConnectionSnapshot closed(std::int16_t rule_index, std::uint64_t writes, std::uint64_t latency_ns) {
  static std::deque<telemetry::LatencyHistogram> histograms;
  telemetry::LatencyHistogram& storage = histograms.emplace_back();
  ConnectionSnapshot snapshot;
  snapshot.rule_index = rule_index;
  snapshot.counters.writes = writes;
  snapshot.counters.bytes = 10 * writes;
  for (std::uint64_t i = 0; i < writes; ++i) {
    storage.record(latency_ns);
  }
  snapshot.write_latency = &storage;
  return snapshot;
}

TEST(ConnectionTotals, ClosedConnectionsJoinTheProcessAndTheirRule) {
  ConnectionTotals totals(2);  // [defaults], rule 0, rule 1
  telemetry::AckLatency acks;
  acks.histogram.record(5'000'000);
  acks.sum_ns = 5'000'000;
  totals.add_closed(closed(0, 3, 1'000), acks);
  totals.add_closed(closed(kRuleDefaults, 1, 2'000), telemetry::AckLatency{});
  EXPECT_EQ(totals.process().connections, 2U);
  EXPECT_EQ(totals.process().counters.writes, 4U);
  EXPECT_EQ(totals.process().write_latency.count(), 4U);
  EXPECT_EQ(totals.process().acks.histogram.count(), 1U);
  ASSERT_NE(totals.rule(0), nullptr);
  EXPECT_EQ(totals.rule(0)->counters.bytes, 30U);
  EXPECT_EQ(totals.rule(0)->acks.sum_ns, 5'000'000U);
  EXPECT_EQ(totals.rule(kRuleDefaults)->connections, 1U);
  EXPECT_EQ(totals.rule(1)->connections, 0U);
  EXPECT_EQ(totals.rule(2), nullptr) << "outside the policy";
}

TEST(ConnectionTotals, ConnectionWithoutARuleCountsOnceInTheProcess) {
  ConnectionTotals totals(1);
  totals.add_closed(closed(kRuleUnchosen, 2, 1'000), telemetry::AckLatency{});
  totals.add_closed(closed(7, 2, 1'000), telemetry::AckLatency{});  // a rule this policy does not have
  EXPECT_EQ(totals.process().connections, 2U);
  EXPECT_EQ(totals.process().counters.writes, 4U);
}

TEST(ConnectionTotals, UnrecordedCountsJoinOnlyWhenAbsorbed) {
  ConnectionTotals totals(1);
  telemetry::ConnectionCounters lost;
  lost.writes = 5;
  lost.heartbeats = 2;
  totals.count_unrecorded(0, lost);
  totals.count_write_after_close(0, -1, 10, EBADF);
  totals.count_write_after_close(kRuleDefaults, 10, 10, 0);
  EXPECT_EQ(totals.process().counters.writes, 0U) << "the worker has not absorbed them yet";
  totals.absorb_unrecorded();
  EXPECT_EQ(totals.process().connections, 1U);
  EXPECT_EQ(totals.process().counters.writes, 7U);
  EXPECT_EQ(totals.process().counters.errors, 1U);
  EXPECT_EQ(totals.rule(0)->counters.heartbeats, 2U);
  EXPECT_EQ(totals.rule(kRuleDefaults)->counters.bytes, 10U);
  totals.absorb_unrecorded();
  EXPECT_EQ(totals.process().counters.writes, 7U) << "absorbed once";
}

TEST(ConnectionTotals, ResetForgetsEverything) {
  ConnectionTotals totals(1);
  totals.add_closed(closed(0, 1, 1'000), telemetry::AckLatency{});
  totals.count_write_after_close(0, 1, 1, 0);
  totals.reset();
  totals.absorb_unrecorded();
  EXPECT_EQ(totals.process().connections, 0U);
  EXPECT_EQ(totals.process().counters.writes, 0U);
  EXPECT_EQ(totals.rule(0)->write_latency.count(), 0U);
}

}  // namespace
}  // namespace tcptune::shim
