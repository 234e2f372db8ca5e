#include "ab_table.hpp"

#include <gtest/gtest.h>

namespace tcptune::cli {
namespace {

std::vector<RunValue> values(std::initializer_list<double> list) {
  std::vector<RunValue> out;
  for (double value : list) {
    out.push_back({value, false});
  }
  return out;
}

TEST(AbTable, ValuesBelowTheResolutionNeverReadAsZero) {
  EXPECT_EQ(format_value({1, true}), "<1");
  EXPECT_EQ(format_value({0.0424, false}), "0.0424");
  EXPECT_EQ(format_arm({{1, true}, {1, true}, {48.5, false}}), "<1 [<1-48.5]");
  EXPECT_EQ(format_arm({{1, true}, {47.25, false}, {48.5, false}}), "47.25 [<1-48.5]");
  EXPECT_EQ(format_arm({}), "-");
}

TEST(AbTable, ArmsAsMedianAndRange) {
  EXPECT_EQ(format_arm(values({3, 1, 2})), "2 [1-3]");
  EXPECT_EQ(format_arm(values({4, 1, 3, 10})), "3.5 [1-10]") << "the mean of the middle two";
}

TEST(AbTable, Ratio) {
  Verdict verdict;
  EXPECT_EQ(format_ratio(verdict), "-");
  verdict.ratio = 0.0612;
  EXPECT_EQ(format_ratio(verdict), "0.0612");
  verdict.interval = Interval{0.0415, 0.0711};
  EXPECT_EQ(format_ratio(verdict), "0.0612 [0.0415-0.0711]");
  verdict.ratio_bound = '<';
  EXPECT_EQ(format_ratio(verdict), "<0.0612 [0.0415-0.0711]");
}

TEST(AbTable, CellsAndTable) {
  AbResults results;
  results.observe.name = "observe-only";
  results.tuned.name = "tuned";
  for (int run = 1; run <= 2; ++run) {
    for (const char* arm : {"observe-only", "tuned"}) {
      AbRun& record = results.runs.emplace_back();
      record.arm = arm;
      record.run = run;
    }
  }
  AbMetric wall{"wall time", "s", Better::lower, values({0.9, 0.95}), values({0.05, 0.06}), {}};
  wall.verdict = judge(wall.observe, wall.tuned, wall.better);
  AbMetric writes{"writes", "", Better::unjudged, values({50, 50}), values({50, 50}), {}};
  results.metrics = {wall, writes};
  const std::vector<std::string> cells = metric_cells(wall);
  ASSERT_EQ(cells.size(), 6U);
  EXPECT_EQ(cells[0], "wall time (s)");
  EXPECT_EQ(cells[1], "0.925 [0.9-0.95]");
  EXPECT_EQ(cells[4], "0.33") << "2 runs per arm: the smallest p possible, 2/C(4,2)";
  EXPECT_EQ(cells[5], "no difference shown");
  EXPECT_EQ(metric_cells(writes)[5], "") << "counts are not judged";
  const std::string table = ab_table(results);
  EXPECT_EQ(table.rfind("2 run(s) per arm, interleaved", 0), 0U) << table;
  EXPECT_NE(table.find("\nwall time (s)  0.925 [0.9-0.95]"), std::string::npos) << table;
  EXPECT_NE(table.find("\nwrites         50 [50-50]"), std::string::npos) << table;
  EXPECT_NE(table.find("wall time: with 2 runs per arm no difference can be shown"), std::string::npos) << table;
}

TEST(AbTable, ShellWords) {
  EXPECT_EQ(shell_words({"tcptune", "ab", "--runs", "5", "--", "./client", "--url=http://x:80/a"}),
            "tcptune ab --runs 5 -- ./client --url=http://x:80/a");
  EXPECT_EQ(shell_words({"sh", "-c", "echo 'hi' > $F"}), R"(sh -c 'echo '\''hi'\'' > $F')");
  EXPECT_EQ(shell_words({""}), "''");
}

}  // namespace
}  // namespace tcptune::cli
