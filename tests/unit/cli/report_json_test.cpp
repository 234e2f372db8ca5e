#include "report_json.hpp"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "log_file.hpp"
#include "log_record.hpp"

namespace tcptune::cli {
namespace {

TEST(ReportJson, SummaryKeysInTheirDocumentedOrder) {
  const TempLog log(
      R"({"event":"conn_close","rule":"web","writes":4,"bytes":10,"eagain":1,"write_latency_hist":[[1000,3000,4]],"write_latency_us":{"max":2.5}})"
      "\nnot json\n");
  LogSummary summary;
  std::string error;
  ASSERT_TRUE(summarize_logs({log.path()}, "rule", summary, error));
  const std::string line = to_json_line(summary_json(summary, "rule"));
  EXPECT_EQ(
      line,
      R"({"by":"rule","groups":[{"key":"web","connections":1,"writes_unmeasured_connections":0,"connections_without_record":0,"writes":4,"bytes":10,"partial_writes":0,)"
      R"("eagain":1,"write_errors":0,"idle_restarts":0,"heartbeats":0,"heartbeat_bytes":0,"keep_warm_ended":0,)"
      R"("write_latency_us":{"p50":1.5,"p90":1.5,"p99":1.5,)"
      R"("p999":1.5,"max":2.5},"ack_latency_us":{"p50":0.0,"p90":0.0,"p99":0.0,"p999":0.0,"max":0.0}}],)"
      R"("total":{"key":"total","connections":1,"writes_unmeasured_connections":0,"connections_without_record":0,"writes":4,"bytes":10,"partial_writes":0,"eagain":1,)"
      R"("write_errors":0,"idle_restarts":0,"heartbeats":0,"heartbeat_bytes":0,"keep_warm_ended":0,)"
      R"("write_latency_us":{"p50":1.5,"p90":1.5,"p99":1.5,"p999":1.5,)"
      R"("max":2.5},"ack_latency_us":{"p50":0.0,"p90":0.0,"p99":0.0,"p999":0.0,"max":0.0}},)"
      R"("records":1,"skipped_lines":1,"uncounted_dropped_records":0})");
}

TEST(ReportJson, LatenciesToThreeDecimals) {
  LogSummary summary;
  summary.groups["g"].write_latency.buckets[{1000, 2000}] = 1;  // 2ab/(a+b) = 1333.33... ns
  summary.groups["g"].write_latency.max_us = 9;
  const nlohmann::ordered_json json = summary_json(summary, "rule");
  EXPECT_EQ(json["groups"][0]["write_latency_us"]["p50"].get<double>(), 1.333);
}

TEST(ReportJson, KeysAreEscapedAsJson) {
  LogSummary summary;
  summary.groups["a\"b\\c\nd\x01"].connections = 1;
  summary.groups["app-\xf0\x9f\x98\x80"].connections = 1;
  summary.groups["bad-\xff"].connections = 1;  // a name that is not UTF-8
  const std::string line = to_json_line(summary_json(summary, "program"));
  EXPECT_NE(line.find(R"("key":"a\"b\\c\nd\u0001")"), std::string::npos) << line;
  EXPECT_NE(line.find("\"key\":\"app-\xf0\x9f\x98\x80\""), std::string::npos) << line;
  EXPECT_NE(line.find("\"key\":\"bad-\xef\xbf\xbd\""), std::string::npos) << line;  // U+FFFD
  // What report --json prints is JSON that reads back.
  const auto back = parse_log_record(line);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ((*back)["groups"].size(), 3U);
}

TEST(ReportJson, CallSitesInTheOrderGiven) {
  const std::vector<std::pair<std::string, SlowWriteSite>> sites = {{"b < c", {1, 90000.04, 90000.04}},
                                                                    {"a", {2, 12000, 7000}}};
  EXPECT_EQ(
      to_json_line(callsites_json(sites, 3)),
      R"({"by":"callsite","sites":[{"callsite":"b < c","slow_writes":1,"total_us":90000.0,"max_us":90000.0},)"
      R"({"callsite":"a","slow_writes":2,"total_us":12000.0,"max_us":7000.0}],"slow_writes_without_callsite":3})");
}

}  // namespace
}  // namespace tcptune::cli
