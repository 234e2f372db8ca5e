#include "log_summary.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "log_file.hpp"

namespace tcptune::cli {
namespace {

constexpr const char* kFixture = TCPTUNE_SOURCE_DIR "/tests/cli/fixtures/probe-two-runs.jsonl";

TEST(LogSummary, TheRecordedFixture) {
  LogSummary summary;
  std::string error;
  ASSERT_TRUE(summarize_logs({kFixture}, "rule", summary, error)) << error;
  ASSERT_EQ(summary.groups.count("(defaults)"), 1U);
  EXPECT_EQ(summary.groups["(defaults)"].connections, 3U);
  EXPECT_EQ(summary.groups["(defaults)"].counters.writes, 407U);
  EXPECT_EQ(summary.groups["servers"].connections, 3U);
  EXPECT_EQ(summary.groups["servers"].counters.writes, 0U);
  EXPECT_EQ(summary.total.connections, 6U);
  EXPECT_EQ(summary.total.counters.bytes, 661000U);
  EXPECT_EQ(summary.skipped_lines, 1U);  // the last line, cut as kill -9 leaves it
}

TEST(LogSummary, GoodAndBadLines) {
  const TempLog log(
      R"({"event":"conn_close","rule":"web","peer":"10.0.0.1:443","program":"curl","writes":2,"bytes":100})"
      "\n"
      R"({"event":"conn_close","rule":"web","peer":"10.0.0.1:8443","program":"wget","writes":3,"bytes":50})"
      "\n"
      R"({"event":"conn_close","rule":"web","writes":+1})"
      "\n"
      R"({"event":"conn_open","rule":"web"})"
      "\n"
      "2026-12-03 text line\n"
      "\n"
      R"({"event":"conn_close","peer":"[::1]:80","writes":01})"
      "\n");
  LogSummary by_rule;
  std::string error;
  ASSERT_TRUE(summarize_logs({log.path()}, "rule", by_rule, error));
  EXPECT_EQ(by_rule.records, 3U);  // two conn_close and a conn_open
  EXPECT_EQ(by_rule.skipped_lines, 4U);
  ASSERT_EQ(by_rule.groups.size(), 1U);
  EXPECT_EQ(by_rule.groups["web"].connections, 2U);
  EXPECT_EQ(by_rule.groups["web"].counters.writes, 5U);
  EXPECT_EQ(by_rule.total.counters.bytes, 150U);

  LogSummary by_peer;
  ASSERT_TRUE(summarize_logs({log.path()}, "peer", by_peer, error));
  ASSERT_EQ(by_peer.groups.size(), 1U);  // the address, without the port
  EXPECT_EQ(by_peer.groups["10.0.0.1"].connections, 2U);

  LogSummary by_program;
  ASSERT_TRUE(summarize_logs({log.path(), log.path()}, "program", by_program, error));
  EXPECT_EQ(by_program.groups["curl"].connections, 2U);
  EXPECT_EQ(by_program.groups["wget"].counters.writes, 6U);
}

std::string conn_closes(int count) {
  std::string lines;
  for (int i = 0; i < count; ++i) {
    lines += R"({"event":"conn_close","rule":"web","writes":1,"bytes":10})"
             "\n";
  }
  return lines;
}

// tcptune run's table at exit reads the log for a bounded time: a deadline already past reads
// nothing and says so; one far off reads every line.
TEST(LogSummary, ReadingStopsAtTheDeadlineAndSaysSo) {
  const TempLog log(conn_closes(1000));
  std::string error;
  LogSummary late;
  ASSERT_TRUE(summarize_logs({log.path()}, "rule", late, error, std::chrono::steady_clock::now())) << error;
  EXPECT_TRUE(late.unfinished);
  EXPECT_EQ(late.total.connections, 0U);
  LogSummary in_time;
  ASSERT_TRUE(
      summarize_logs({log.path()}, "rule", in_time, error, std::chrono::steady_clock::now() + std::chrono::hours(1)))
      << error;
  EXPECT_FALSE(in_time.unfinished);
  EXPECT_EQ(in_time.total.connections, 1000U);
}

// A deadline that passes while a file is read stops it at the next block, marks that file
// unfinished and leaves the next one unread.
TEST(LogSummary, ADeadlinePassingMidFileStopsThere) {
  constexpr int kLines = 5000;  // several blocks of LogLines
  const TempLog first(conn_closes(kLines));
  const TempLog second(conn_closes(10));
  std::vector<FileRead> reads;
  std::string error;
  std::uint64_t seen = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(20);
  ASSERT_TRUE(for_each_record(
      {first.path(), second.path()},
      [&seen](const nlohmann::json*) {
        ++seen;
        std::this_thread::sleep_for(std::chrono::microseconds(50));
      },
      reads, error, deadline));
  ASSERT_EQ(reads.size(), 1U) << "the second file is not read";
  EXPECT_TRUE(reads[0].unfinished);
  EXPECT_GT(seen, 0U);
  EXPECT_LT(seen, static_cast<std::uint64_t>(kLines));
  EXPECT_EQ(reads[0].lines, seen);
}

// What each file gave, for report's exit 1 and its reason when no record was read.
TEST(LogSummary, FilesWithoutRecordsAndWhy) {
  const TempLog text("2026-12-02T11:26:13.281047+00:00 info tcptune[7172] start program=curl\nsecond line\n");
  const TempLog empty("");
  const TempLog json(R"({"event":"start","pid":1})"
                     "\n");
  LogSummary summary;
  std::string error;
  ASSERT_TRUE(summarize_logs({text.path(), empty.path(), json.path()}, "rule", summary, error)) << error;
  ASSERT_EQ(summary.files.size(), 3U);
  EXPECT_EQ(summary.files[0].lines, 2U);
  EXPECT_EQ(summary.files[0].records, 0U);
  EXPECT_EQ(summary.files[1].lines, 0U);
  EXPECT_EQ(summary.files[2].records, 1U);
  EXPECT_EQ(why_no_records(summary.files[0]).rfind("2 lines, none a JSON record: a text log", 0), 0U);
  EXPECT_EQ(why_no_records(summary.files[1]).rfind("empty: ", 0), 0U);
  LogSummary missing;
  EXPECT_FALSE(summarize_logs({text.path() + ".missing"}, "rule", missing, error));
  EXPECT_EQ(error, "cannot read " + text.path() + ".missing: No such file or directory");
}

TEST(LogSummary, SupervisedConnectionsAreCountedAsUnmeasured) {
  const TempLog log(R"({"event":"conn_close","rule":"web","supervised":true,"writes_measured":false})"
                    "\n"
                    R"({"event":"conn_close","rule":"web","writes":2,"bytes":100})"
                    "\n"
                    R"({"event":"conn_close","rule":"go","supervised":true,"writes_measured":false})"
                    "\n");
  LogSummary summary;
  std::string error;
  ASSERT_TRUE(summarize_logs({log.path()}, "rule", summary, error)) << error;
  EXPECT_EQ(summary.groups["web"].connections, 2U);
  EXPECT_EQ(summary.groups["web"].unmeasured, 1U);
  EXPECT_EQ(summary.groups["go"].unmeasured, 1U);
  EXPECT_EQ(summary.total.unmeasured, 2U);
  EXPECT_EQ(summary.total.counters.writes, 2U);

  char* text = nullptr;
  std::size_t length = 0;
  std::FILE* out = open_memstream(&text, &length);
  print_summary_table(out, summary, "rule");
  (void)std::fclose(out);
  const std::string table(text, length);
  std::free(text);
  EXPECT_NE(table.find("go                        1        -"), std::string::npos) << table;
  EXPECT_NE(table.find("web                       2        2"), std::string::npos) << table;
  EXPECT_NE(table.find("(2 connection(s) tuned in supervised mode"), std::string::npos) << table;
}

// A close burst: the worker dropped conn_close records, the summary still counted everything.
constexpr const char* kDroppedLog =
    R"({"ts":"2026-12-04T10:00:00.000000Z","pid":7,"program":"app","event":"start"})"
    "\n"
    R"({"ts":"2026-12-04T10:00:01.000000Z","pid":7,"program":"app","event":"conn_close","rule":"a","peer":"10.0.0.1:1","writes":3,"bytes":300,"write_latency_hist":[[1000,2000,3]],"write_latency_us":{"max":1.9}})"
    "\n"
    R"({"ts":"2026-12-04T10:00:01.000001Z","pid":7,"program":"app","event":"conn_close","rule":"b","peer":"10.0.0.2:1","writes":3,"bytes":300})"
    "\n"
    R"({"ts":"2026-12-04T10:00:01.000002Z","pid":7,"program":"app","event":"dropped","records":3})"
    "\n"
    R"({"ts":"2026-12-04T10:00:02.000000Z","pid":7,"program":"app","event":"summary","connections":5,"writes":15,"bytes":1500,"eagain":2,"dropped_records":3,)"
    R"("by_rule":[{"rule":"a","connections":3,"writes":9,"bytes":900},{"rule":"b","connections":2,"writes":6,"bytes":600}]})"
    "\n";

std::string table_of(const LogSummary& summary, const std::string& by) {
  char* text = nullptr;
  std::size_t length = 0;
  std::FILE* out = open_memstream(&text, &length);
  print_summary_table(out, summary, by);
  (void)std::fclose(out);
  std::string table(text, length);
  std::free(text);
  return table;
}

TEST(LogSummary, DroppedRecordsAreCountedFromTheSummary) {
  const TempLog log(kDroppedLog);
  LogSummary by_rule;
  std::string error;
  ASSERT_TRUE(summarize_logs({log.path()}, "rule", by_rule, error)) << error;
  EXPECT_EQ(by_rule.total.connections, 5U);
  EXPECT_EQ(by_rule.total.without_record, 3U);
  EXPECT_EQ(by_rule.total.counters.writes, 15U);
  EXPECT_EQ(by_rule.total.counters.bytes, 1500U);
  EXPECT_EQ(by_rule.total.counters.would_block, 2U);  // a counter by_rule lacks: the total has it
  EXPECT_EQ(by_rule.groups["a"].connections, 3U);
  EXPECT_EQ(by_rule.groups["a"].without_record, 2U);
  EXPECT_EQ(by_rule.groups["a"].counters.writes, 9U);
  EXPECT_EQ(by_rule.groups["b"].counters.bytes, 600U);
  EXPECT_EQ(by_rule.uncounted_dropped_records, 0U);  // the summary counts them
  const std::string table = table_of(by_rule, "rule");
  EXPECT_NE(table.find("total                     5       15"), std::string::npos) << table;
  EXPECT_NE(table.find("(3 conn_close records dropped"), std::string::npos) << table;
  EXPECT_NE(table.find("the latencies cover 2 of 5 connections"), std::string::npos) << table;

  LogSummary by_peer;
  ASSERT_TRUE(summarize_logs({log.path()}, "peer", by_peer, error));
  EXPECT_EQ(by_peer.groups["(no record)"].connections, 3U);
  EXPECT_EQ(by_peer.groups["(no record)"].counters.writes, 9U);
  EXPECT_EQ(by_peer.groups["10.0.0.1"].connections, 1U);
  EXPECT_NE(table_of(by_peer, "peer").find("(no record)               3        9     900 B         -"),
            std::string::npos)
      << table_of(by_peer, "peer");

  LogSummary by_program;
  ASSERT_TRUE(summarize_logs({log.path()}, "program", by_program, error));
  EXPECT_EQ(by_program.groups.size(), 1U);
  EXPECT_EQ(by_program.groups["app"].connections, 5U);
}

TEST(LogSummary, RotatedFilesInAnyOrderAreNotCountedTwice) {
  const std::string text = kDroppedLog;
  const std::size_t summary_at = text.find(R"({"ts":"2026-12-04T10:00:02)");
  const TempLog older(text.substr(0, summary_at));
  const TempLog newer(text.substr(summary_at));
  for (const std::vector<std::string>& files :
       {std::vector<std::string>{newer.path(), older.path()}, std::vector<std::string>{older.path(), newer.path()}}) {
    LogSummary summary;
    std::string error;
    ASSERT_TRUE(summarize_logs(files, "rule", summary, error));
    EXPECT_EQ(summary.total.connections, 5U);
    EXPECT_EQ(summary.total.without_record, 3U);
    EXPECT_EQ(summary.groups["a"].connections, 3U);
  }
}

TEST(LogSummary, EachLifetimeOfAPidHasItsOwnSummary) {
  // The same pid execs (a second start record): the first image's connections, written before
  // the exec and never summarized, do not make up for the second image's dropped records.
  const TempLog log(R"({"ts":"2026-12-04T09:00:00.000000Z","pid":7,"event":"start"})"
                    "\n"
                    R"({"ts":"2026-12-04T09:00:01.000000Z","pid":7,"event":"conn_close","rule":"a","writes":1})"
                    "\n"
                    R"({"ts":"2026-12-04T09:00:01.000001Z","pid":7,"event":"conn_close","rule":"a","writes":1})"
                    "\n" +
                    std::string(kDroppedLog));
  LogSummary summary;
  std::string error;
  ASSERT_TRUE(summarize_logs({log.path()}, "rule", summary, error));
  EXPECT_EQ(summary.total.connections, 7U);
  EXPECT_EQ(summary.total.without_record, 3U);
  EXPECT_EQ(summary.total.counters.writes, 17U);
}

TEST(LogSummary, DroppedRecordsWithoutASummaryAreSaidToBeMissing) {
  const TempLog log(R"({"ts":"2026-12-04T09:00:00.000000Z","pid":8,"event":"start"})"
                    "\n"
                    R"({"ts":"2026-12-04T09:00:01.000000Z","pid":8,"event":"conn_close","rule":"a","writes":1})"
                    "\n"
                    R"({"ts":"2026-12-04T09:00:01.000001Z","pid":8,"event":"dropped","records":40})"
                    "\n");
  LogSummary summary;
  std::string error;
  ASSERT_TRUE(summarize_logs({log.path()}, "rule", summary, error));
  EXPECT_EQ(summary.total.connections, 1U);
  EXPECT_EQ(summary.uncounted_dropped_records, 40U);
  EXPECT_NE(table_of(summary, "rule").find("(40 record(s) were dropped where no summary counts them"),
            std::string::npos);
}

TEST(LogSummary, AMissingFileIsAnError) {
  LogSummary summary;
  std::string error;
  EXPECT_FALSE(summarize_logs({"/nonexistent/x.jsonl"}, "rule", summary, error));
  EXPECT_EQ(error, "cannot read /nonexistent/x.jsonl: No such file or directory");
}

TEST(LogSummary, PercentilesMergeTheBuckets) {
  // Two connections: 90 writes in [1000, 2000) ns, then 10 in [100000, 200000) ns.
  const TempLog log(
      R"({"event":"conn_close","writes":90,"write_latency_hist":[[1000,2000,90]],"write_latency_us":{"max":1.9}})"
      "\n"
      R"({"event":"conn_close","writes":10,"write_latency_hist":[[100000,200000,10]],"write_latency_us":{"max":150}})"
      "\n");
  LogSummary summary;
  std::string error;
  ASSERT_TRUE(summarize_logs({log.path()}, "rule", summary, error));
  const MergedHistogram& merged = summary.total.write_latency;
  EXPECT_EQ(merged.max_us, 150.0);
  EXPECT_NEAR(merged.percentile_us(50), 2.0 * 1000 * 2000 / 3000 / 1000, 1e-9);  // 1.333 us
  EXPECT_NEAR(merged.percentile_us(90), 1.333, 1e-3);
  EXPECT_NEAR(merged.percentile_us(99), 133.333, 1e-3);
  EXPECT_NEAR(merged.percentile_us(100), 133.333, 1e-3);
  EXPECT_EQ(MergedHistogram{}.percentile_us(50), 0.0);
}

TEST(LogSummary, SlowWritesByCallSite) {
  const TempLog log(R"({"event":"slow_write","duration_us":5000,"callsite":["a+0x1","b+0x2","c+0x3","d+0x4"]})"
                    "\n"
                    R"({"event":"slow_write","duration_us":7000,"callsite":["a+0x1","b+0x2","c+0x3"]})"
                    "\n"
                    R"({"event":"slow_write","duration_us":4000})"
                    "\n"
                    R"({"event":"slow_write","duration_us":1,"callsite":[]})"
                    "\n"
                    R"({"event":"slow_write","duration_us":2,"callsite":[7]})"
                    "\n"
                    R"({"event":"slow_write","duration_us":3,"callsite":["x"],})"
                    "\n");
  std::map<std::string, SlowWriteSite> sites;
  std::uint64_t without = 0;
  std::string error;
  std::vector<FileRead> reads;
  ASSERT_TRUE(summarize_slow_writes({log.path()}, sites, without, reads, error));
  EXPECT_EQ(without, 2U);
  ASSERT_EQ(sites.size(), 2U);
  const SlowWriteSite& site = sites["a+0x1 < b+0x2 < c+0x3"];  // the first three frames
  EXPECT_EQ(site.writes, 2U);
  EXPECT_EQ(site.total_us, 12000.0);
  EXPECT_EQ(site.max_us, 7000.0);
  EXPECT_EQ(sites["?"].writes, 1U);  // a frame that is not a string
}

}  // namespace
}  // namespace tcptune::cli
