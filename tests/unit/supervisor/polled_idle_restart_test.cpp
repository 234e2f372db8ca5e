#include "polled_idle_restart.hpp"

#include <gtest/gtest.h>
#include <netinet/tcp.h>

namespace tcptune::supervisor {
namespace {

shim::TcpInfoSummary info(std::uint32_t last_data_sent_ms, std::uint32_t cwnd, std::uint32_t unacked = 0) {
  shim::TcpInfoSummary summary;
  summary.state = TCP_ESTABLISHED;
  summary.rto_us = 384'000;
  summary.rtt_us = 180'000;
  summary.last_data_sent_ms = last_data_sent_ms;
  summary.snd_cwnd = cwnd;
  summary.unacked = unacked;
  return summary;
}

TEST(PolledIdleRestart, SilencePastTheRtoThenASendWithASmallerWindow) {
  const auto restart = idle_restart_between(info(2900, 80), info(20, 10), 200);
  ASSERT_TRUE(restart.has_value());
  EXPECT_EQ(restart->idle_ms_at_least, 2900U);
  EXPECT_EQ(restart->cwnd_before, 80U);
  EXPECT_EQ(restart->cwnd_after, 10U);
  EXPECT_EQ(restart->rto_us, 384'000U);
}

TEST(PolledIdleRestart, NothingWithoutEachCondition) {
  EXPECT_FALSE(idle_restart_between(info(300, 80), info(20, 10), 200)) << "silent for less than the RTO";
  EXPECT_FALSE(idle_restart_between(info(2900, 80, 3), info(20, 10), 200)) << "bytes in flight: no restart";
  EXPECT_FALSE(idle_restart_between(info(2900, 80), info(2900 + 200, 80), 200)) << "nothing sent since";
  EXPECT_FALSE(idle_restart_between(info(2900, 80), info(20, 80), 200)) << "the window did not shrink (BBR)";
  shim::TcpInfoSummary closing = info(2900, 80);
  closing.state = TCP_CLOSE_WAIT;
  EXPECT_FALSE(idle_restart_between(closing, info(20, 10), 200)) << "not established";
}

}  // namespace
}  // namespace tcptune::supervisor
