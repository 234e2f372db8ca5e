#include "log_lines.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <sstream>
#include <string>
#include <vector>

namespace tcptune::cli {
namespace {

struct Line {
  std::string text;
  bool cut = false;
};

std::vector<Line> lines_of(const std::string& text) {
  std::istringstream in(text);
  LogLines lines(in);
  std::vector<Line> out;
  Line line;
  while (lines.next(line.text, line.cut)) {
    out.push_back(line);
  }
  EXPECT_FALSE(lines.stopped());
  return out;
}

TEST(LogLines, LinesAsGetlineGivesThem) {
  const std::vector<Line> lines = lines_of("one\n\nthree\nlast without newline");
  ASSERT_EQ(lines.size(), 4U);
  EXPECT_EQ(lines[0].text, "one");
  EXPECT_EQ(lines[1].text, "");
  EXPECT_EQ(lines[2].text, "three");
  EXPECT_EQ(lines[3].text, "last without newline");
  EXPECT_TRUE(lines_of("").empty());
  EXPECT_EQ(lines_of("a\n").size(), 1U);
}

// A line across blocks comes whole; one beyond the bound comes cut there, and the next line after it.
TEST(LogLines, ALineTooLongIsCutAndTheNextOneComesAfterIt) {
  const std::string across(100'000, 'x');
  const std::string too_long(LogLines::kMostLineBytes + 200'000, 'y');
  const std::vector<Line> lines = lines_of(across + "\n" + too_long + "\nnext\n");
  ASSERT_EQ(lines.size(), 3U);
  EXPECT_EQ(lines[0].text, across);
  EXPECT_FALSE(lines[0].cut);
  EXPECT_EQ(lines[1].text.size(), LogLines::kMostLineBytes);
  EXPECT_TRUE(lines[1].cut);
  EXPECT_EQ(lines[2].text, "next");
  EXPECT_FALSE(lines[2].cut);
}

// The deadline is looked at between blocks, inside a line too: one with no newline at all
// stops there, not at its end.
TEST(LogLines, ADeadlineStopsReadingEvenInsideALine) {
  std::istringstream in(std::string(LogLines::kMostLineBytes * 4, 'z'));
  LogLines lines(in, std::chrono::steady_clock::now());
  std::string line;
  bool cut = false;
  EXPECT_FALSE(lines.next(line, cut));
  EXPECT_TRUE(lines.stopped());
  EXPECT_TRUE(line.empty());
}

}  // namespace
}  // namespace tcptune::cli
