#include "link_json.hpp"

#include <gtest/gtest.h>

namespace tcptune::linkem {
namespace {

TEST(LinkemJson, DescribesBothDirections) {
  LinkConfig config;
  config.a_to_b.delay_ns = 20000000;
  config.b_to_a.delay_ns = 20000000;
  config.a_to_b.rate_bps = 100000000;
  config.b_to_a.loss_pct = 0.5;
  config.b_to_a.jitter_ns = 1500000;
  config.seed = 7;
  const std::string json = format_link_json({"tun", &config, {"cubic", 1}, 0, nullptr, nullptr});
  EXPECT_EQ(json,
            "{\"backend\":\"tun\",\"rtt_ms\":40,"
            "\"a_to_b\":{\"delay_ms\":20,\"rate_mbit\":100,\"queue_packets\":1000,\"loss_pct\":0,\"jitter_ms\":0},"
            "\"b_to_a\":{\"delay_ms\":20,\"rate_mbit\":0,\"queue_packets\":1000,\"loss_pct\":0.5,\"jitter_ms\":1.5},"
            "\"congestion\":\"cubic\",\"slow_start_after_idle\":1,\"seed\":7}");
}

TEST(LinkemJson, CountersAndPid) {
  LinkConfig config;
  DirectionCounters a_to_b;
  a_to_b.packets = 2;
  a_to_b.count_lateness(500);
  a_to_b.count_lateness(2500);
  const DirectionCounters b_to_a;
  const std::string json = format_link_json({"tun", &config, {"bbr", 0}, 42, &a_to_b, &b_to_a});
  EXPECT_NE(json.find("\"counters\":{\"packets_in\":0,\"packets\":2,"), std::string::npos) << json;
  EXPECT_NE(json.find("\"max_lateness_us\":2.5,\"mean_lateness_us\":1.5,\"p50_lateness_us\":2.5,"
                      "\"p99_lateness_us\":2.5,\"late_over_500us\":0}"),
            std::string::npos)
      << json;
  EXPECT_NE(json.find("\"pid\":42}"), std::string::npos) << json;
  EXPECT_NE(json.find("\"slow_start_after_idle\":0"), std::string::npos) << json;
}

TEST(LinkemCounters, LatenessQuantiles) {
  DirectionCounters counters;
  for (int i = 0; i < 98; ++i) {
    counters.count_lateness(15000);  // the 10-20 us bin
  }
  counters.count_lateness(700000);
  counters.count_lateness(30000000);  // beyond the bins
  EXPECT_EQ(counters.lateness_quantile_us(0.5), 20);
  EXPECT_EQ(counters.lateness_quantile_us(0.98), 20);
  EXPECT_EQ(counters.lateness_quantile_us(0.99), 710);
  EXPECT_EQ(counters.lateness_quantile_us(1.0), 30000);
  DirectionCounters coarse;
  coarse.count_lateness(2345000);
  EXPECT_EQ(coarse.lateness_quantile_us(0.5), 2345);  // the bin's edge (2400) capped at the maximum
  coarse.count_lateness(2346000);
  coarse.count_lateness(5000000);
  EXPECT_EQ(coarse.lateness_quantile_us(0.5), 2400);
  EXPECT_EQ(counters.late_over_500us, 2U);
  EXPECT_EQ(counters.max_lateness_ns, 30000000);
}

TEST(LinkemJson, EscapesStrings) {
  EXPECT_EQ(json_string("a\"b\\c\n"), "\"a\\\"b\\\\c\\u000a\"");
}

}  // namespace
}  // namespace tcptune::linkem
