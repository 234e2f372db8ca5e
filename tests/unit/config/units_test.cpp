#include "tcptune/config/units.hpp"

#include <gtest/gtest.h>

namespace tcptune::config {
namespace {

using namespace std::chrono_literals;

TEST(Units, Sizes) {
  EXPECT_EQ(parse_size("65536").value(), 65536U);
  EXPECT_EQ(parse_size("64KiB").value(), 65536U);
  EXPECT_EQ(parse_size("4MB").value(), 4000000U);
  EXPECT_EQ(parse_size("1.5MiB").value(), 1572864U);
  EXPECT_EQ(parse_size("1GiB").value(), 1073741824U);
  EXPECT_EQ(parse_size("128KB").value(), 128000U);
}

TEST(Units, SizeErrors) {
  EXPECT_FALSE(parse_size("").ok());
  EXPECT_FALSE(parse_size("-4KB").ok());
  EXPECT_FALSE(parse_size("4 parsecs").ok());
  EXPECT_NE(parse_size("4XB").error().find("unknown unit \"XB\""), std::string::npos);
  EXPECT_NE(parse_size("lots").error().find("not a size"), std::string::npos);
  // Beyond uint64_t: rejected, not wrapped to a small number (it once came out as 1 byte).
  EXPECT_NE(parse_size("100000000000000000000").error().find("too large"), std::string::npos);
  EXPECT_NE(parse_size("20000000000GB").error().find("too large"), std::string::npos);
}

TEST(Units, Durations) {
  EXPECT_EQ(parse_duration("500us").value(), 500us);
  EXPECT_EQ(parse_duration("180ms").value(), 180ms);
  EXPECT_EQ(parse_duration("2s").value(), 2s);
  EXPECT_EQ(parse_duration("1.5s").value(), 1500ms);
  EXPECT_EQ(parse_duration("1m").value(), 60s);
  EXPECT_EQ(parse_duration("1h").value(), 3600s);
  EXPECT_EQ(parse_duration("10ns").value(), 10ns);
  // Exact above 2^52 ns, where adding 0.5 before truncating rounded to the next even number.
  EXPECT_EQ(parse_duration("4503599627370497ns").value(), std::chrono::nanoseconds(4503599627370497));
}

TEST(Units, DurationErrors) {
  EXPECT_NE(parse_duration("30").error().find("missing a unit"), std::string::npos);
  EXPECT_NE(parse_duration("30 fortnights").error().find("unknown unit"), std::string::npos);
  EXPECT_FALSE(parse_duration("ms").ok());
}

TEST(Units, Rates) {
  EXPECT_EQ(parse_rate("1Gbit").value(), 125000000U);
  EXPECT_EQ(parse_rate("100Mbit").value(), 12500000U);
  EXPECT_EQ(parse_rate("100Mbit/s").value(), 12500000U);
  EXPECT_EQ(parse_rate("1Gbps").value(), 125000000U);
  EXPECT_EQ(parse_rate("12.5MB/s").value(), 12500000U);
  EXPECT_EQ(parse_rate("10Kbit").value(), 1250U);
  EXPECT_FALSE(parse_rate("100").ok());
  EXPECT_FALSE(parse_rate("100MB").ok());  // a size, not a rate
  EXPECT_NE(parse_rate("200000000000Gbit").error().find("too large"), std::string::npos);
}

TEST(Units, Formatting) {
  EXPECT_EQ(format_size(22500000), "22.5 MB");
  EXPECT_EQ(format_size(4194304), "4.19 MB");
  EXPECT_EQ(format_size(512), "512 B");
  EXPECT_EQ(format_duration(180ms), "180 ms");
  EXPECT_EQ(format_duration(1500ms), "1.5 s");
  EXPECT_EQ(format_rate(125000000), "1 Gbit/s");
}

}  // namespace
}  // namespace tcptune::config
