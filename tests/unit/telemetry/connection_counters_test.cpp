// The one list of counters: how a write is counted, sums, and the record names readers rely on.
#include "connection_counters.hpp"

#include <gtest/gtest.h>

#include <cerrno>
#include <set>
#include <string>

namespace tcptune::telemetry {
namespace {

TEST(ConnectionCounters, EachWriteOutcomeLandsInItsCounter) {
  AtomicConnectionCounters counters;
  counters.count_write(100, 100, 0);      // whole
  counters.count_write(40, 100, 0);       // in part
  counters.count_write(-1, 100, EAGAIN);  // would block
  counters.count_write(-1, 100, EPIPE);   // failed
  const ConnectionCounters seen = counters.load();
  EXPECT_EQ(seen.writes, 4U);
  EXPECT_EQ(seen.bytes, 140U);
  EXPECT_EQ(seen.partial_writes, 1U);
  EXPECT_EQ(seen.would_block, 1U);
  EXPECT_EQ(seen.errors, 1U);
}

TEST(ConnectionCounters, TakeLeavesZerosAndSumsAddEveryCounter) {
  AtomicConnectionCounters counters;
  counters.count_write(10, 10, 0);
  counters.heartbeats.fetch_add(3);
  ConnectionCounters total;
  total += counters.take();
  total += counters.take();  // nothing left the second time
  EXPECT_EQ(total.writes, 1U);
  EXPECT_EQ(total.heartbeats, 3U);
  for (const CounterField& field : kCounterFields) {
    EXPECT_EQ(counters.load().*field.member, 0U) << field.record_field;
  }
  ConnectionCounters ones;
  for (const CounterField& field : kCounterFields) {
    ones.*field.member = 1;
  }
  ConnectionCounters twice = ones;
  twice += ones;
  for (const CounterField& field : kCounterFields) {
    EXPECT_EQ(twice.*field.member, 2U) << field.record_field;
  }
}

TEST(ConnectionCounters, RecordFieldsAreUniqueAndKeepTheirPublishedNames) {
  std::set<std::string> names;
  for (const CounterField& field : kCounterFields) {
    EXPECT_TRUE(names.insert(field.record_field).second) << field.record_field;
    EXPECT_NE(std::string(field.help), "");
  }
  // Names that logs, dashboards and `tcptune report` already read.
  for (const char* published : {"writes", "bytes", "partial_writes", "eagain", "write_errors", "idle_restarts",
                                "heartbeats", "heartbeat_bytes"}) {
    EXPECT_EQ(names.count(published), 1U) << published;
  }
  EXPECT_EQ(names.size(), std::size(kCounterFields));
}

}  // namespace
}  // namespace tcptune::telemetry
