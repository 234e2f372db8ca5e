#include "units.hpp"

#include <gtest/gtest.h>

namespace tcptune::linkem {
namespace {

TEST(LinkemUnits, Durations) {
  std::string error;
  EXPECT_EQ(parse_duration_ns("90ms", error), 90000000);
  EXPECT_EQ(parse_duration_ns("500us", error), 500000);
  EXPECT_EQ(parse_duration_ns("1.5s", error), 1500000000);
  EXPECT_EQ(parse_duration_ns("10ns", error), 10);
  EXPECT_EQ(parse_duration_ns("0", error), 0);
  EXPECT_EQ(parse_duration_ns("0.25ms", error), 250000);
}

TEST(LinkemUnits, DurationErrors) {
  std::string error;
  EXPECT_FALSE(parse_duration_ns("40", error));
  EXPECT_NE(error.find("\"40\""), std::string::npos);
  EXPECT_FALSE(parse_duration_ns("40 parsecs", error));
  EXPECT_FALSE(parse_duration_ns("40x", error));
  EXPECT_FALSE(parse_duration_ns("-1ms", error));
  EXPECT_FALSE(parse_duration_ns("ms", error));
  EXPECT_FALSE(parse_duration_ns("", error));
  EXPECT_FALSE(parse_duration_ns("1.2.3ms", error));
  EXPECT_FALSE(parse_duration_ns("7200s", error));
}

TEST(LinkemUnits, Rates) {
  std::string error;
  EXPECT_EQ(parse_rate_bps("100Mbit", error), 100000000U);
  EXPECT_EQ(parse_rate_bps("1Gbit", error), 1000000000U);
  EXPECT_EQ(parse_rate_bps("12.5MB/s", error), 100000000U);
  EXPECT_EQ(parse_rate_bps("250Mbps", error), 250000000U);
  EXPECT_EQ(parse_rate_bps("64Kbit", error), 64000U);
  EXPECT_EQ(parse_rate_bps("1MiB/s", error), 8388608U);
  EXPECT_EQ(parse_rate_bps("0", error), 0U);
}

TEST(LinkemUnits, RateErrors) {
  std::string error;
  EXPECT_FALSE(parse_rate_bps("100", error));
  EXPECT_NE(error.find("\"100\""), std::string::npos);
  EXPECT_FALSE(parse_rate_bps("100Mb", error));
  EXPECT_FALSE(parse_rate_bps("fast", error));
  EXPECT_FALSE(parse_rate_bps("10bit", error));  // below 1Kbit: a typo, not a link
}

TEST(LinkemUnits, CountsAndPercent) {
  std::string error;
  EXPECT_EQ(parse_count("1000", 1000000, error), 1000U);
  EXPECT_FALSE(parse_count("1e3", 1000000, error));
  EXPECT_FALSE(parse_count("2000000", 1000000, error));
  EXPECT_EQ(parse_count("18446744073709551615", UINT64_MAX, error), UINT64_MAX);
  EXPECT_FALSE(parse_count("18446744073709551616", UINT64_MAX, error));
  EXPECT_EQ(parse_percent("5", error), 5.0);
  EXPECT_EQ(parse_percent("0.1%", error), 0.1);
  EXPECT_FALSE(parse_percent("101", error));
  EXPECT_FALSE(parse_percent("-1", error));
  EXPECT_FALSE(parse_percent("5x", error));
}

TEST(LinkemUnits, FormatDecimal) {
  EXPECT_EQ(format_decimal(40), "40");
  EXPECT_EQ(format_decimal(0.5), "0.5");
  EXPECT_EQ(format_decimal(96.5333333), "96.533");
  EXPECT_EQ(format_decimal(0), "0");
  EXPECT_EQ(format_decimal(-0.0001), "0");
  EXPECT_EQ(format_decimal(12.5, 6), "12.5");
}

}  // namespace
}  // namespace tcptune::linkem
