// The textfile every process of a program shares: exact values, a strict parser, and the merge
// (the file's sums, less this process's last shares, plus its current ones; gauges from the
// live processes only), on its own and through real files, locks and processes.
#include "textfile_merge.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "exposition.hpp"
#include "process_identity.hpp"
#include "prometheus_textfile.hpp"

namespace tcptune::telemetry {
namespace {

SampleValue value_of(const char* text) {
  const auto value = parse_sample_value(text);
  EXPECT_TRUE(value.has_value()) << text;
  return value.value_or(SampleValue{});
}

TEST(SampleValue, ParsesAndWritesExactly) {
  EXPECT_EQ(value_of("12"), (SampleValue{12, 0}));
  EXPECT_EQ(value_of("0.5"), (SampleValue{0, 500'000'000}));
  EXPECT_EQ(value_of("1.000000001"), (SampleValue{1, 1}));
  EXPECT_EQ(value_of("1.2e-05"), (SampleValue{0, 12'000}));  // as older versions wrote sums
  EXPECT_EQ(value_of("3e2"), (SampleValue{300, 0}));
  EXPECT_EQ(value_of("18446744073709551615"), (SampleValue{18446744073709551615ULL, 0}));
  for (const char* bad : {"-1", "NaN", "+Inf", "", "1.2.3", "0x10", "1e", "18446744073709551616"}) {
    EXPECT_FALSE(parse_sample_value(bad).has_value()) << bad;
  }
  EXPECT_EQ(format_sample_value({12, 0}), "12");
  EXPECT_EQ(format_sample_value({0, 120'000'000}), "0.12");
  EXPECT_EQ(format_sample_value({1, 1}), "1.000000001");
  EXPECT_EQ(format_sample_value(sample_value_from_ns(2'500'000'123)), "2.500000123");
}

TEST(SampleValue, AddsAndSubtractsWithCarry) {
  SampleValue value{1, 900'000'000};
  value += SampleValue{0, 200'000'000};
  EXPECT_EQ(value, (SampleValue{2, 100'000'000}));
  value -= SampleValue{0, 200'000'000};
  EXPECT_EQ(value, (SampleValue{1, 900'000'000}));
  value -= SampleValue{5, 0};
  EXPECT_EQ(value, SampleValue{}) << "saturates at zero";
}

std::string parse_error(const std::string& text) {
  std::string error;
  return parse_exposition(text, error).has_value() ? std::string() : error;
}

TEST(Exposition, ReadsWhatItWritesAndRefusesWhatIsBroken) {
  MetricsRow row;
  row.rule = "a \"b\"";
  row.connections = 2;
  row.counters.writes = 7;
  row.write_latency.record(3'000);
  MetricsContext context;
  context.program = "p";
  const std::string text = render_prometheus({row}, context);
  std::string error;
  const auto parsed = parse_exposition(text, error);
  ASSERT_TRUE(parsed.has_value()) << error;
  EXPECT_EQ(render_exposition(*parsed), text) << "parse and render are each other's inverse";
  EXPECT_EQ(parsed->find_family("tcptune_processes")->type, "gauge");

  EXPECT_NE(parse_error(text.substr(0, text.size() - 5)), "") << "a file cut short";
  EXPECT_NE(parse_error("# TYPE a_total counter\na_total 1\na_total 2\n"), "") << "a duplicate series";
  EXPECT_NE(parse_error("# TYPE a_total counter\na_total{x=\"1\",y=\"2\"} 1\na_total{y=\"2\",x=\"1\"} 1\n"), "")
      << "the same series with its labels in another order";
  EXPECT_NE(parse_error("a_total 1\n# TYPE a_total counter\n"), "") << "a TYPE after the samples";
  EXPECT_NE(parse_error("# TYPE a_total counter\na_total 1 1700000000\n"), "") << "a timestamp";
  EXPECT_NE(parse_error("# TYPE a_total counter\na_total -1\n"), "");
  EXPECT_NE(parse_error("# TYPE a_total counter\na_total{x=\"1} 1\n"), "");
  EXPECT_NE(parse_error("\x7f"
                        "ELF\x02\x01\n"),
            "");
  EXPECT_NE(parse_error("# TYPE a gauge\na 1\n# TYPE b gauge\nb 1\na{x=\"2\"} 1\n"), "") << "a family split";
  EXPECT_NE(parse_error("# tcptune-live pid=x start=1 pidns=2 g{} 1\n"), "");
  EXPECT_EQ(parse_error(""), "") << "an empty file is an empty exposition";
  EXPECT_EQ(parse_error("# a comment\n\n# TYPE a gauge\na{x=\"a b}\"} 1\n"), "")
      << "comments, blank lines and a brace inside a label value";
}

// A process's share: writes, one histogram and the processes gauge.
Exposition share(const std::string& program, std::uint64_t writes, std::uint64_t latency_ns) {
  MetricsRow row;
  row.rule = "r";
  row.connections = 1;
  row.counters.writes = writes;
  row.write_latency.record(static_cast<std::int64_t>(latency_ns));
  MetricsContext context;
  context.program = program;
  context.keep_warm_rules = {"r"};
  std::string error;
  auto parsed = parse_exposition(render_prometheus({row}, context), error);
  EXPECT_TRUE(parsed.has_value()) << error;
  return parsed.value_or(Exposition{});
}

SampleValue sample(const Exposition& exposition, const std::string& key) {
  for (const Family& family : exposition.families) {
    for (const Sample& s : family.samples) {
      if (s.key == key) {
        return s.value;
      }
    }
  }
  ADD_FAILURE() << "no series " << key;
  return {};
}

const std::string kWrites = "tcptune_writes_total{program=\"p\",rule=\"r\"}";
const std::string kProcesses = "tcptune_processes{program=\"p\"}";
const std::string kCount = "tcptune_write_latency_seconds_count{program=\"p\",rule=\"r\"}";
const std::string kKeepsWarm = "tcptune_rule_keeps_warm{program=\"p\",rule=\"r\"}";

TEST(TextfileMerge, SumsEveryProcessAndReplacesOnlyItsOwnShare) {
  const ProcessIdentity a{100, 1, 7};
  const ProcessIdentity b{200, 2, 7};
  auto all_running = [](const ProcessIdentity&) { return true; };
  Exposition file = merge_contribution(std::nullopt, nullptr, share("p", 70, 2'000), a, false, all_running, "g1");
  EXPECT_EQ(file.generation, "g1");
  const Exposition b_first = share("p", 50, 3'000);
  file = merge_contribution(file, nullptr, b_first, b, false, all_running, "unused");
  EXPECT_EQ(file.generation, "g1") << "the file keeps its generation";
  EXPECT_EQ(sample(file, kWrites), (SampleValue{120, 0}));
  EXPECT_EQ(sample(file, kCount), (SampleValue{2, 0}));
  EXPECT_EQ(sample(file, kProcesses), (SampleValue{2, 0}));
  EXPECT_EQ(sample(file, kKeepsWarm), (SampleValue{2, 0}));
  // a rewrites: its 70 is replaced by 80, b's 50 stays.
  const Exposition a_first = share("p", 70, 2'000);
  file = merge_contribution(file, &a_first, share("p", 80, 2'000), a, false, all_running, "unused");
  EXPECT_EQ(sample(file, kWrites), (SampleValue{130, 0}));
  EXPECT_EQ(sample(file, kCount), (SampleValue{2, 0}));
  EXPECT_EQ(sample(file, kProcesses), (SampleValue{2, 0}));
  // b leaves with 55 writes: its counts stay in the sums, its gauges go.
  file = merge_contribution(file, &b_first, share("p", 55, 3'000), b, true, all_running, "unused");
  EXPECT_EQ(sample(file, kWrites), (SampleValue{135, 0}));
  EXPECT_EQ(sample(file, kProcesses), (SampleValue{1, 0}));
  EXPECT_EQ(sample(file, kKeepsWarm), (SampleValue{1, 0}));
  ASSERT_EQ(file.live.size(), 2U);  // a's two gauges
  // a leaves too: the gauges read 0, the series stay.
  file = merge_contribution(file, nullptr, share("p", 0, 0), a, true, all_running, "unused");
  EXPECT_EQ(sample(file, kProcesses), SampleValue{});
  EXPECT_TRUE(file.live.empty());
  // What render writes parses back into the same sums.
  std::string error;
  const auto again = parse_exposition(render_exposition(file), error);
  ASSERT_TRUE(again.has_value()) << error;
  EXPECT_EQ(sample(*again, kWrites), sample(file, kWrites));
  EXPECT_EQ(again->generation, "g1");
}

// Processes of two arms of one program (TCPTUNE_ARM) sharing one textfile: the arm label keeps
// each arm's counters, histograms and gauges apart, and a rewrite replaces only its own arm's share.
TEST(TextfileMerge, TwoArmsInOneFileKeepTheirOwnSeries) {
  const auto arm_share = [](const std::string& arm, std::uint64_t writes) {
    MetricsRow row;
    row.rule = "r";
    row.connections = 1;
    row.counters.writes = writes;
    row.write_latency.record(2'000);
    MetricsContext context;
    context.program = "p";
    context.arm = arm;
    std::string error;
    auto parsed = parse_exposition(render_prometheus({row}, context), error);
    EXPECT_TRUE(parsed.has_value()) << error;
    return parsed.value_or(Exposition{});
  };
  const ProcessIdentity on{100, 1, 7};
  const ProcessIdentity off{200, 2, 7};
  auto all_running = [](const ProcessIdentity&) { return true; };
  const Exposition on_first = arm_share("on", 70);
  Exposition file = merge_contribution(std::nullopt, nullptr, on_first, on, false, all_running, "g");
  file = merge_contribution(file, nullptr, arm_share("off", 5), off, false, all_running, "g");
  file = merge_contribution(file, &on_first, arm_share("on", 80), on, false, all_running, "g");
  EXPECT_EQ(sample(file, "tcptune_writes_total{arm=\"on\",program=\"p\",rule=\"r\"}"), (SampleValue{80, 0}));
  EXPECT_EQ(sample(file, "tcptune_writes_total{arm=\"off\",program=\"p\",rule=\"r\"}"), (SampleValue{5, 0}));
  EXPECT_EQ(sample(file, "tcptune_write_latency_seconds_count{arm=\"off\",program=\"p\",rule=\"r\"}"),
            (SampleValue{1, 0}));
  EXPECT_EQ(sample(file, "tcptune_processes{arm=\"on\",program=\"p\"}"), (SampleValue{1, 0}));
  EXPECT_EQ(sample(file, "tcptune_processes{arm=\"off\",program=\"p\"}"), (SampleValue{1, 0}));
  for (const Family& family : file.families) {
    for (const Sample& series : family.samples) {
      EXPECT_NE(series.key.find("arm=\""), std::string::npos) << "a series without its arm: " << series.key;
    }
  }
}

TEST(TextfileMerge, LatencySumsStayExact) {
  const ProcessIdentity a{100, 1, 7};
  const ProcessIdentity b{200, 2, 7};
  auto all_running = [](const ProcessIdentity&) { return true; };
  const Exposition a_share = share("p", 1, 1'234'567);
  const Exposition b_share = share("p", 1, 7'654'321);
  Exposition file = merge_contribution(std::nullopt, nullptr, a_share, a, false, all_running, "g");
  file = merge_contribution(file, nullptr, b_share, b, false, all_running, "g");
  const std::string sum = "tcptune_write_latency_seconds_sum{program=\"p\",rule=\"r\"}";
  SampleValue expected = sample(a_share, sum);
  expected += sample(b_share, sum);
  EXPECT_EQ(sample(file, sum), expected);
  for (int i = 0; i < 1000; ++i) {  // rewrites of the same share never drift
    file = merge_contribution(file, &a_share, a_share, a, false, all_running, "g");
  }
  EXPECT_EQ(sample(file, sum), expected);
}

TEST(TextfileMerge, AProcessSeenGoneLosesItsGaugesNotItsCounts) {
  const ProcessIdentity a{100, 1, 7};
  const ProcessIdentity killed{200, 2, 7};
  Exposition file = merge_contribution(
      std::nullopt, nullptr, share("p", 5, 1'000), killed, false, [](const ProcessIdentity&) { return true; }, "g");
  file = merge_contribution(
      file, nullptr, share("p", 3, 1'000), a, false, [&](const ProcessIdentity& other) { return !(other == killed); },
      "g");
  EXPECT_EQ(sample(file, kWrites), (SampleValue{8, 0}));
  EXPECT_EQ(sample(file, kProcesses), (SampleValue{1, 0}));
}

TEST(TextfileMerge, AnotherGenerationOrAStartOverAddsTheWholeShare) {
  const ProcessIdentity a{100, 1, 7};
  auto all_running = [](const ProcessIdentity&) { return true; };
  // The file no longer holds a's last share (deleted, or started over by another process):
  // previous is not passed, and a's current counts go in whole.
  Exposition file = merge_contribution(std::nullopt, nullptr, share("p", 9, 1'000), a, false, all_running, "g2");
  EXPECT_EQ(sample(file, kWrites), (SampleValue{9, 0}));
  // A family of another type in the file (written by hand) starts over as the share's type.
  std::string error;
  auto odd =
      parse_exposition("# TYPE tcptune_writes_total gauge\ntcptune_writes_total{program=\"p\",rule=\"r\"} 99\n", error);
  ASSERT_TRUE(odd.has_value()) << error;
  file = merge_contribution(odd, nullptr, share("p", 9, 1'000), a, false, all_running, "g3");
  EXPECT_EQ(file.find_family("tcptune_writes_total")->type, "counter");
  EXPECT_EQ(sample(file, kWrites), (SampleValue{9, 0}));
  EXPECT_EQ(file.generation, "g3") << "a file without a merge header gets a generation";
}

TEST(TextfileMerge, APatternWithThePidIsWarnedAbout) {
  EXPECT_NE(per_process_pattern_warning("/d/{program}.{pid}.prom").find("drops as duplicates"), std::string::npos);
  EXPECT_EQ(per_process_pattern_warning("/d/{program}.prom"), "");
}

// Real files: a scratch directory per test.
class MergedTextfileFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/tcptune-merge-XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir_ = pattern;
    path_ = dir_ + "/p.prom";
  }
  void TearDown() override { (void)std::system(("rm -rf " + dir_).c_str()); }

  std::string read() const {
    std::ifstream in(path_);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }
  Exposition parsed() const {
    std::string error;
    auto exposition = parse_exposition(read(), error);
    EXPECT_TRUE(exposition.has_value()) << error;
    return exposition.value_or(Exposition{});
  }
  static std::string contribution(std::uint64_t writes) {
    MetricsRow row;
    row.rule = "r";
    row.connections = 1;
    row.counters.writes = writes;
    MetricsContext context;
    context.program = "p";
    return render_prometheus({row}, context);
  }
  // A child process writes its share (and leaves, or not) and exits without more.
  void write_in_child(std::uint64_t writes, bool leaving) const {
    const pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      MergedTextfile file(plain_file_calls());
      const auto result = file.write(path_, contribution(writes), leaving, std::chrono::milliseconds(1000));
      _exit(result.outcome == MergedTextfile::Outcome::written ? 0 : 1);
    }
    int status = 0;
    ASSERT_EQ(waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }

  std::string dir_;
  std::string path_;
};

TEST_F(MergedTextfileFiles, ProcessesThatEndLeaveTheirCountsAndTakeTheirGauges) {
  write_in_child(70, true);   // ended with its last write
  write_in_child(50, false);  // ended without one (as if killed): the next writer sees it gone
  MergedTextfile mine(plain_file_calls());
  ASSERT_EQ(mine.write(path_, contribution(3), false, std::chrono::milliseconds(0)).outcome,
            MergedTextfile::Outcome::written);
  ASSERT_EQ(mine.write(path_, contribution(4), false, std::chrono::milliseconds(0)).outcome,
            MergedTextfile::Outcome::written);
  const Exposition file = parsed();
  EXPECT_EQ(sample(file, kWrites), (SampleValue{124, 0}));
  EXPECT_EQ(sample(file, kProcesses), (SampleValue{1, 0})) << "only this process is live";
  ASSERT_EQ(file.live.size(), 1U);
  EXPECT_EQ(file.live[0].process.pid, getpid());
  EXPECT_EQ(access((path_ + ".tmp." + std::to_string(getpid())).c_str(), F_OK), -1) << "no temporary file left";
}

TEST_F(MergedTextfileFiles, ATornOrForeignFileIsSaidOnceAndStartedOver) {
  {
    std::ofstream out(path_);
    out << "# TYPE tcptune_writes_total counter\ntcptune_writes_total{program=\"p\",rule=\"r\"} 12";  // no newline
  }
  MergedTextfile mine(plain_file_calls());
  const auto result = mine.write(path_, contribution(5), false, std::chrono::milliseconds(0));
  ASSERT_EQ(result.outcome, MergedTextfile::Outcome::written) << result.error;
  EXPECT_NE(result.started_over.find("does not parse"), std::string::npos) << result.started_over;
  EXPECT_EQ(sample(parsed(), kWrites), (SampleValue{5, 0}));
  const auto next = mine.write(path_, contribution(6), false, std::chrono::milliseconds(0));
  EXPECT_EQ(next.started_over, "") << "the file is this scheme's now";
  EXPECT_EQ(sample(parsed(), kWrites), (SampleValue{6, 0}));
  // Deleted under it: this process's counts go in whole again, not less its last share.
  ASSERT_EQ(std::remove(path_.c_str()), 0);
  ASSERT_EQ(mine.write(path_, contribution(7), false, std::chrono::milliseconds(0)).outcome,
            MergedTextfile::Outcome::written);
  EXPECT_EQ(sample(parsed(), kWrites), (SampleValue{7, 0}));
}

TEST_F(MergedTextfileFiles, ALockHeldElsewhereIsWaitedForAtMostAsLongAsAsked) {
  const int other = open((path_ + ".lock").c_str(), O_RDONLY | O_CREAT | O_CLOEXEC, 0644);
  ASSERT_GE(other, 0);
  ASSERT_EQ(flock(other, LOCK_EX), 0);
  MergedTextfile mine(plain_file_calls());
  EXPECT_EQ(mine.write(path_, contribution(1), false, std::chrono::milliseconds(0)).outcome,
            MergedTextfile::Outcome::busy);
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(mine.write(path_, contribution(1), false, std::chrono::milliseconds(30)).outcome,
            MergedTextfile::Outcome::busy);
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(30));
  EXPECT_EQ(mine.lock_held(), -1);
  EXPECT_NE(access(path_.c_str(), F_OK), 0) << "nothing was written";
  close(other);  // the kernel releases the lock with its last descriptor
  EXPECT_EQ(mine.write(path_, contribution(2), false, std::chrono::milliseconds(0)).outcome,
            MergedTextfile::Outcome::written);
  EXPECT_EQ(sample(parsed(), kWrites), (SampleValue{2, 0}));
}

// Many processes ending at once: a last write that finds the file locked past its wait leaves
// its shares beside the file, and the next merge of any process adds them as that write would
// have (its earlier share replaced, its gauges gone) and removes them.
TEST_F(MergedTextfileFiles, ALastWriteThatFindsTheLockHeldIsLeftAsideAndFoldedInNext) {
  MergedTextfile ending(plain_file_calls());
  ASSERT_EQ(ending.write(path_, contribution(10), false, std::chrono::milliseconds(0)).outcome,
            MergedTextfile::Outcome::written);
  const int other = open((path_ + ".lock").c_str(), O_RDONLY | O_CREAT | O_CLOEXEC, 0644);
  ASSERT_GE(other, 0);
  ASSERT_EQ(flock(other, LOCK_EX), 0);
  EXPECT_EQ(ending.write(path_, contribution(25), false, std::chrono::milliseconds(0)).outcome,
            MergedTextfile::Outcome::busy)
      << "a write that is not the last waits for the next";
  const auto last = ending.write(path_, contribution(30), true, std::chrono::milliseconds(10));
  ASSERT_EQ(last.outcome, MergedTextfile::Outcome::left_aside) << last.error;
  EXPECT_EQ(sample(parsed(), kWrites), (SampleValue{10, 0})) << "the file itself is untouched";
  close(other);
  MergedTextfile next(plain_file_calls());
  ASSERT_EQ(next.write(path_, contribution(4), false, std::chrono::milliseconds(0)).outcome,
            MergedTextfile::Outcome::written);
  const Exposition file = parsed();
  EXPECT_EQ(sample(file, kWrites), (SampleValue{34, 0})) << "30 in place of the ending one's 10, and 4";
  EXPECT_EQ(sample(file, kProcesses), (SampleValue{1, 0})) << "the ending one's gauges are gone";
  ASSERT_EQ(next.write(path_, contribution(5), false, std::chrono::milliseconds(0)).outcome,
            MergedTextfile::Outcome::written);
  EXPECT_EQ(sample(parsed(), kWrites), (SampleValue{35, 0})) << "folded in once";
  // Left aside in a file of another generation (deleted meanwhile): the whole last share counts.
  MergedTextfile again(plain_file_calls());
  ASSERT_EQ(again.write(path_, contribution(8), false, std::chrono::milliseconds(0)).outcome,
            MergedTextfile::Outcome::written);
  const int held = open((path_ + ".lock").c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_EQ(flock(held, LOCK_EX), 0);
  ASSERT_EQ(again.write(path_, contribution(9), true, std::chrono::milliseconds(0)).outcome,
            MergedTextfile::Outcome::left_aside);
  close(held);
  ASSERT_EQ(std::remove(path_.c_str()), 0);
  ASSERT_EQ(next.write(path_, contribution(6), false, std::chrono::milliseconds(0)).outcome,
            MergedTextfile::Outcome::written);
  EXPECT_EQ(sample(parsed(), kWrites), (SampleValue{15, 0}));
}

TEST_F(MergedTextfileFiles, AnUnwritableDirectoryIsAnError) {
  MergedTextfile mine(plain_file_calls());
  const auto result = mine.write(dir_ + "/missing/x.prom", contribution(1), false, std::chrono::milliseconds(0));
  EXPECT_EQ(result.outcome, MergedTextfile::Outcome::failed);
  EXPECT_NE(result.error.find("x.prom"), std::string::npos) << result.error;
}

TEST(ProcessIdentity, TellsAnEndedProcessFromALiveOne) {
  const ProcessIdentity me = own_process_identity(plain_file_calls());
  EXPECT_EQ(me.pid, getpid());
  if (me.pid_namespace == 0) {
    GTEST_SKIP() << "no /proc here";
  }
  EXPECT_NE(me.start_ticks, 0U);
  EXPECT_TRUE(may_be_running(me, me, plain_file_calls()));
  ProcessIdentity reused = me;
  reused.start_ticks += 1;
  EXPECT_FALSE(may_be_running(reused, me, plain_file_calls())) << "the same pid started at another time";
  ProcessIdentity elsewhere = reused;
  elsewhere.pid_namespace += 1;
  EXPECT_TRUE(may_be_running(elsewhere, me, plain_file_calls())) << "another pid namespace cannot be judged";
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    _exit(0);
  }
  ProcessIdentity ended{child, 0, me.pid_namespace};
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_FALSE(may_be_running(ended, me, plain_file_calls()));
}

}  // namespace
}  // namespace tcptune::telemetry
