#include "link_config.hpp"

#include <gtest/gtest.h>
#include <vector>

namespace tcptune::linkem {
namespace {

constexpr std::int64_t kMs = 1000000;

bool parse(std::vector<std::string_view> args, LinkConfig& config, std::string& error) {
  return parse_link_options(args, config, error);
}

TEST(LinkemOptions, Defaults) {
  LinkConfig config;
  std::string error;
  ASSERT_TRUE(parse({}, config, error)) << error;
  EXPECT_EQ(config.a_to_b, LinkParams{});
  EXPECT_EQ(config.a_to_b.queue_packets, 1000U);
  EXPECT_EQ(config.a_to_b.rate_bps, 0U);
  EXPECT_EQ(config.sysctls.congestion, "cubic");
  EXPECT_EQ(config.sysctls.slow_start_after_idle, 1);
  EXPECT_EQ(config.backend, Backend::kAuto);
  EXPECT_FALSE(config.seed_given);
}

TEST(LinkemOptions, RttSplitsIntoOneWayDelays) {
  LinkConfig config;
  std::string error;
  ASSERT_TRUE(parse({"--rtt", "40ms"}, config, error)) << error;
  EXPECT_EQ(config.a_to_b.delay_ns, 20 * kMs);
  EXPECT_EQ(config.b_to_a.delay_ns, 20 * kMs);
  LinkConfig odd;
  ASSERT_TRUE(parse({"--rtt=3ns"}, odd, error)) << error;
  EXPECT_EQ(odd.a_to_b.delay_ns + odd.b_to_a.delay_ns, 3);
}

TEST(LinkemOptions, OverridesWinWhateverTheOrder) {
  LinkConfig config;
  std::string error;
  ASSERT_TRUE(parse({"--ab-rate", "10Mbit", "--rate", "100Mbit", "--delay", "5ms", "--ba-delay=7ms", "--loss", "1",
                     "--ba-loss", "0", "--queue", "50", "--ab-jitter", "1ms", "--seed", "9"},
                    config, error))
      << error;
  EXPECT_EQ(config.a_to_b.rate_bps, 10000000U);
  EXPECT_EQ(config.b_to_a.rate_bps, 100000000U);
  EXPECT_EQ(config.a_to_b.delay_ns, 5 * kMs);
  EXPECT_EQ(config.b_to_a.delay_ns, 7 * kMs);
  EXPECT_EQ(config.a_to_b.loss_pct, 1.0);
  EXPECT_EQ(config.b_to_a.loss_pct, 0.0);
  EXPECT_EQ(config.b_to_a.queue_packets, 50U);
  EXPECT_EQ(config.a_to_b.jitter_ns, 1 * kMs);
  EXPECT_EQ(config.b_to_a.jitter_ns, 0);
  EXPECT_EQ(config.seed, 9U);
  EXPECT_TRUE(config.seed_given);
}

TEST(LinkemOptions, SysctlsAndBackend) {
  LinkConfig config;
  std::string error;
  ASSERT_TRUE(parse({"--congestion", "bbr", "--slow-start-after-idle", "0", "--backend", "tun"}, config, error));
  EXPECT_EQ(config.sysctls.congestion, "bbr");
  EXPECT_EQ(config.sysctls.slow_start_after_idle, 0);
  EXPECT_EQ(config.backend, Backend::kTun);
}

TEST(LinkemOptions, Errors) {
  const std::vector<std::vector<std::string_view>> bad = {
      {"--rtt", "40"},
      {"--rtt", "40ms", "--delay", "20ms"},
      {"--rate"},
      {"--rate", "fast"},
      {"--queue", "0"},
      {"--loss", "120"},
      {"--frobnicate", "1"},
      {"--ab-rtt", "10ms"},
      {"--ab-frob", "1"},
      {"40ms"},
      {"--delay", "1ms", "--delay", "2ms"},
      {"--backend", "pcap"},
      {"--congestion", "Cu;"},
      {"--slow-start-after-idle", "2"},
      {"--seed", "-1"},
  };
  for (const auto& args : bad) {
    LinkConfig config;
    std::string error;
    EXPECT_FALSE(parse(args, config, error)) << args[0];
    EXPECT_FALSE(error.empty()) << args[0];
  }
}

TEST(LinkemOptions, SetTakesOnlySysctls) {
  SysctlChange change;
  std::string error;
  const std::vector<std::string_view> good = {"--congestion", "reno"};
  ASSERT_TRUE(parse_set_options(good, change, error)) << error;
  EXPECT_EQ(change.congestion, "reno");
  EXPECT_FALSE(change.slow_start_after_idle);

  SysctlChange both;
  const std::vector<std::string_view> two = {"--slow-start-after-idle=0", "--congestion=cubic"};
  ASSERT_TRUE(parse_set_options(two, both, error)) << error;
  EXPECT_EQ(both.slow_start_after_idle, 0);

  SysctlChange none;
  EXPECT_FALSE(parse_set_options({}, none, error));
  const std::vector<std::string_view> link_option = {"--rtt", "10ms"};
  EXPECT_FALSE(parse_set_options(link_option, none, error));
  EXPECT_NE(error.find("--rtt"), std::string::npos);
}

}  // namespace
}  // namespace tcptune::linkem
