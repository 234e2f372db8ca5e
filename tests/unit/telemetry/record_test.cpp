#include "record.hpp"

#include <gtest/gtest.h>

namespace tcptune::telemetry {
namespace {

TEST(Record, TextAndJsonCarryTheSameFields) {
  Record record("conn_open");
  record.add("fd", 7)
      .add("rule", "wan")
      .add("peer", "198.18.0.2:5001")
      .add("note", "left alone")
      .add("ratio", 0.5)
      .add("forced", true)
      .add_json_section("options", R"([{"name":"nodelay"}])", " nodelay requested=\"on\"");
  EXPECT_EQ(record.event(), "conn_open");
  EXPECT_EQ(
      record.text(),
      R"(conn_open fd=7 rule=wan peer=198.18.0.2:5001 note="left alone" ratio=0.5 forced=true | nodelay requested="on")");
  EXPECT_EQ(record.json_fields(), R"("event":"conn_open","fd":7,"rule":"wan","peer":"198.18.0.2:5001",)"
                                  R"("note":"left alone","ratio":0.5,"forced":true,"options":[{"name":"nodelay"}])");
}

TEST(Record, NestedValueWithItsTextForm) {
  Record record("conn_close");
  record.add_json("write_latency_us", R"({"p50":12.5})", "p50=12.5");
  EXPECT_EQ(record.text(), "conn_close write_latency_us=p50=12.5");
  EXPECT_EQ(record.json_fields(), R"("event":"conn_close","write_latency_us":{"p50":12.5})");
}

}  // namespace
}  // namespace tcptune::telemetry
