#include "tcptune/config/buffer_plan.hpp"

#include <gtest/gtest.h>

namespace tcptune::config {
namespace {

using namespace std::chrono_literals;

// This machine's numbers: rmem_max 4 MiB, tcp_rmem 4096 131072 33554432.
constexpr BufferLimits kHost{4194304, 131072, 33554432};

TEST(BufferPlan, BandwidthDelayProduct) {
  EXPECT_EQ(bdp_target(125000000, 180ms), 22500000U);  // 1 Gbit/s x 180 ms
  EXPECT_EQ(bdp_target(12500000, 100ms), 1250000U);    // 100 Mbit/s x 100 ms
  EXPECT_EQ(bdp_target(1, 1ns), 1U);
  // Past what setsockopt takes (an int) it saturates instead of overflowing the conversion.
  EXPECT_EQ(bdp_target(10000000000000000000ULL, 60s), 2147483647U);
  EXPECT_EQ(bdp_target(1000000000, 3s), 2147483647U);
}

TEST(BufferPlan, ClampedBelowAutotuningLeavesAutotuningOn) {
  const BufferDecision d = plan_buffer(22500000, false, kHost, false, "rcvbuf");
  EXPECT_EQ(d.action, BufferAction::leave_autotuning);
  EXPECT_EQ(d.reason,
            "rcvbuf 22.5 MB requested; net.core.rmem_max caps it at 4.19 MB; autotuning can reach 33.6 MB, so "
            "autotuning stays on");
}

TEST(BufferPlan, ForceWhenAllowed) {
  const BufferDecision d = plan_buffer(22500000, false, kHost, true, "rcvbuf");
  EXPECT_EQ(d.action, BufferAction::pin_forced);
  EXPECT_EQ(d.value, 22500000U);
}

TEST(BufferPlan, PinsWhatFits) {
  const BufferDecision d = plan_buffer(1250000, false, kHost, false, "rcvbuf");
  EXPECT_EQ(d.action, BufferAction::pin);
  EXPECT_EQ(d.value, 1250000U);
}

TEST(BufferPlan, SmallBdpLeftToTheKernelDefault) {
  EXPECT_EQ(plan_buffer(12500, false, kHost, false, "rcvbuf").action, BufferAction::leave_autotuning);
  // ... but an explicit size is the user's choice.
  const BufferDecision d = plan_buffer(16384, true, kHost, false, "rcvbuf");
  EXPECT_EQ(d.action, BufferAction::pin);
  EXPECT_EQ(d.value, 16384U);
}

TEST(BufferPlan, ClampedAboveAutotuningPinsTheCeiling) {
  const BufferLimits small_autotune{4194304, 131072, 6291456};  // tcp_rmem[2] 6 MB < 2 x rmem_max
  const BufferDecision d = plan_buffer(22500000, false, small_autotune, false, "sndbuf");
  EXPECT_EQ(d.action, BufferAction::pin);
  EXPECT_EQ(d.value, 4194304U);
  EXPECT_NE(d.reason.find("net.core.wmem_max caps it"), std::string::npos);
}

TEST(BufferPlan, ExplicitSizesFollowTheSameClamp) {
  EXPECT_EQ(plan_buffer(64000000, true, kHost, false, "rcvbuf").action, BufferAction::leave_autotuning);
  EXPECT_EQ(plan_buffer(64000000, true, kHost, true, "rcvbuf").action, BufferAction::pin_forced);
}

}  // namespace
}  // namespace tcptune::config
