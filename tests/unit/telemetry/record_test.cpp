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

// The forms are process-wide: each test that changes them puts every form back.
class RecordFormsGuard {
 public:
  explicit RecordFormsGuard(RecordForms forms) { set_record_forms(forms); }
  RecordFormsGuard(const RecordFormsGuard&) = delete;
  RecordFormsGuard& operator=(const RecordFormsGuard&) = delete;
  ~RecordFormsGuard() { set_record_forms({}); }
};

TEST(Record, BuildsOnlyTheFormTheLogWrites) {
  int made_json = 0;
  int made_text = 0;
  const auto json = [&] {
    ++made_json;
    return std::string(R"({"p50":1})");
  };
  const auto text = [&] {
    ++made_text;
    return std::string("p50=1");
  };
  {
    const RecordFormsGuard guard({.text = false, .json = true, .json_field_spans = false});
    Record record("conn_close");
    record.add("fd", 7).add("ratio", 0.5).add_json("write_latency_us", json, text);
    EXPECT_EQ(record.json_fields(), R"("event":"conn_close","fd":7,"ratio":0.5,"write_latency_us":{"p50":1})");
    EXPECT_EQ(record.text(), "conn_close");
    // Without the fields' spans nothing can be left out: a record over the limit is empty.
    EXPECT_EQ(record.json_fields_within(20), "");
  }
  EXPECT_EQ(made_json, 1);
  EXPECT_EQ(made_text, 0);
  {
    const RecordFormsGuard guard({.text = true, .json = false});
    Record record("conn_close");
    record.add("fd", 7).add("ratio", 0.5).add_json("write_latency_us", json, text);
    EXPECT_EQ(record.text(), "conn_close fd=7 ratio=0.5 write_latency_us=p50=1");
    EXPECT_EQ(record.json_fields(), R"("event":"conn_close")");
  }
  EXPECT_EQ(made_json, 1);
  EXPECT_EQ(made_text, 1);
  Record both("conn_close");
  both.add_json("write_latency_us", json, text);
  EXPECT_EQ(both.text(), "conn_close write_latency_us=p50=1");
  EXPECT_EQ(both.json_fields(), R"("event":"conn_close","write_latency_us":{"p50":1})");
}

TEST(Record, NestedValueWithItsTextForm) {
  Record record("conn_close");
  record.add_json("write_latency_us", R"({"p50":12.5})", "p50=12.5");
  EXPECT_EQ(record.text(), "conn_close write_latency_us=p50=12.5");
  EXPECT_EQ(record.json_fields(), R"("event":"conn_close","write_latency_us":{"p50":12.5})");
}

// For a log whose lines have a size limit (stderr, PIPE_BUF): the longest fields go first, named.
TEST(Record, WithinALimitTheLongestFieldsAreLeftOut) {
  Record record("conn_close");
  record.add("fd", 7).add("rule", std::string(300, 'r')).add_json("hist", "[" + std::string(200, '1') + "]", "");
  const std::string all = record.json_fields();
  EXPECT_EQ(record.json_fields_within(all.size()), all);
  EXPECT_EQ(record.json_fields_within(260),
            R"("event":"conn_close","fd":7,"hist":[)" + std::string(200, '1') + R"(],"omitted":["rule"])");
  EXPECT_EQ(record.json_fields_within(60), R"("event":"conn_close","fd":7,"omitted":["rule","hist"])");
  EXPECT_EQ(record.json_fields_within(20), "");  // not even the event and the names fit
}

}  // namespace
}  // namespace tcptune::telemetry
