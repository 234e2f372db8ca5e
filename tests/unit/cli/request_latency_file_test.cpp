#include "request_latency_file.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>

namespace tcptune::cli {
namespace {

TEST(RequestLatencyFile, UnitsAndSeconds) {
  EXPECT_DOUBLE_EQ(parse_latency_line("0.044"), 44.0) << "a number alone is seconds, as curl -w prints";
  EXPECT_DOUBLE_EQ(parse_latency_line("1e-3\n"), 1.0);
  EXPECT_DOUBLE_EQ(parse_latency_line(" 12.5ms "), 12.5);
  EXPECT_DOUBLE_EQ(parse_latency_line("850 us"), 0.85);
  EXPECT_DOUBLE_EQ(parse_latency_line("2500ns\r"), 0.0025);
  EXPECT_DOUBLE_EQ(parse_latency_line("3 s"), 3000.0);
  for (const char* bad : {"", "abc", "-1", "12 min", "nan", "inf", "5 ms extra", "0x10", "0x1p3", "0X1Ams", "infinity"}) {
    EXPECT_LT(parse_latency_line(bad), 0) << bad;
  }
}

TEST(RequestLatencyFile, ReadsLinesAndCountsTheRest) {
  char path[] = "/tmp/tcptune-latency-XXXXXX";
  const int fd = ::mkstemp(path);
  ASSERT_GE(fd, 0);
  ::close(fd);
  std::ofstream(path) << "0.040\n\n41ms\nGET / 200\n0.5 ms\noops\n";
  const RequestLatencies read = read_request_latencies(path);
  EXPECT_TRUE(read.readable);
  EXPECT_EQ(read.ms, (std::vector<double>{40.0, 41.0, 0.5}));
  EXPECT_EQ(read.bad_lines, 2U);
  EXPECT_EQ(read.first_bad, "line 4: 'GET / 200'");
  ::unlink(path);
  EXPECT_FALSE(read_request_latencies(path).readable);
}

}  // namespace
}  // namespace tcptune::cli
