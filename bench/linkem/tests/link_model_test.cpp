#include "link_model.hpp"

#include <gtest/gtest.h>
#include <cmath>

namespace tcptune::linkem {
namespace {

constexpr std::int64_t kUs = 1000;
constexpr std::int64_t kMs = 1000000;
constexpr std::int64_t kStart = 1000 * kMs;  // an arbitrary monotonic clock reading

LinkParams params_with(std::int64_t delay_ns, std::uint64_t rate_bps, std::uint32_t queue = 1000, double loss = 0,
                       std::int64_t jitter_ns = 0) {
  LinkParams params;
  params.delay_ns = delay_ns;
  params.rate_bps = rate_bps;
  params.queue_packets = queue;
  params.loss_pct = loss;
  params.jitter_ns = jitter_ns;
  return params;
}

TEST(LinkModel, UnlimitedWithoutDelayDeliversAtOnce) {
  DirectionModel model(params_with(0, 0), 1);
  const Decision decision = model.admit(kStart, 1500);
  EXPECT_EQ(decision.verdict, Verdict::kDeliver);
  EXPECT_EQ(decision.deliver_at_ns, kStart);
}

TEST(LinkModel, DelayOnly) {
  DirectionModel model(params_with(20 * kMs, 0), 1);
  EXPECT_EQ(model.admit(kStart, 1500).deliver_at_ns, kStart + 20 * kMs);
  EXPECT_EQ(model.admit(kStart + 5, 60).deliver_at_ns, kStart + 5 + 20 * kMs);
}

TEST(LinkModel, BackToBackPacketsAreSerialized) {
  // 1500 bytes at 100 Mbit/s: 120 us each.
  DirectionModel model(params_with(10 * kMs, 100000000), 1);
  for (int i = 1; i <= 5; ++i) {
    EXPECT_EQ(model.admit(kStart, 1500).deliver_at_ns, kStart + i * (120 * kUs) + 10 * kMs) << i;
  }
}

TEST(LinkModel, IdleLinkStartsAtArrival) {
  DirectionModel model(params_with(0, 100000000), 1);
  EXPECT_EQ(model.admit(kStart, 1500).deliver_at_ns, kStart + 120 * kUs);
  // Arrives after the first has left: no queueing.
  EXPECT_EQ(model.admit(kStart + 1 * kMs, 1500).deliver_at_ns, kStart + 1 * kMs + 120 * kUs);
  // Arrives while the previous one is on the wire: waits for it.
  EXPECT_EQ(model.admit(kStart + 1 * kMs + 60 * kUs, 1500).deliver_at_ns, kStart + 1 * kMs + 240 * kUs);
}

TEST(LinkModel, RateIsExactOverManyPackets) {
  // 1000 bytes at 3 Mbit/s is 2666666.67 ns: rounding each packet would drift, the remainder must not.
  DirectionModel model(params_with(0, 3000000, 1000000), 1);
  std::int64_t last = 0;
  for (int i = 0; i < 30000; ++i) {
    last = model.admit(kStart, 1000).deliver_at_ns;
  }
  const double exact_ns = 30000.0 * 8000 / 3e6 * 1e9;
  EXPECT_NEAR(static_cast<double>(last - kStart), exact_ns, 1.0);
}

TEST(LinkModel, DropTailCountsOnlyPacketsWaitingForTheWire) {
  // 1 Mbit/s: a 1250-byte packet takes 10 ms. Queue 3: one on the wire plus three waiting.
  DirectionModel model(params_with(0, 1000000, 3), 1);
  int delivered = 0;
  int dropped = 0;
  for (int i = 0; i < 10; ++i) {
    const Decision decision = model.admit(kStart, 1250);
    delivered += decision.verdict == Verdict::kDeliver ? 1 : 0;
    dropped += decision.verdict == Verdict::kQueueDrop ? 1 : 0;
  }
  EXPECT_EQ(delivered, 4);
  EXPECT_EQ(dropped, 6);
  EXPECT_EQ(model.waiting(kStart), 3U);
  // After 10 ms the second packet is on the wire: one place is free again.
  EXPECT_EQ(model.waiting(kStart + 10 * kMs), 2U);
  const Decision next = model.admit(kStart + 10 * kMs, 1250);
  EXPECT_EQ(next.verdict, Verdict::kDeliver);
  EXPECT_EQ(next.deliver_at_ns, kStart + 50 * kMs);
  EXPECT_EQ(model.admit(kStart + 10 * kMs, 1250).verdict, Verdict::kQueueDrop);
  EXPECT_EQ(model.waiting(kStart + 1000 * kMs), 0U);
}

TEST(LinkModel, UnlimitedRateNeverQueues) {
  DirectionModel model(params_with(0, 0, 1), 1);
  for (int i = 0; i < 100; ++i) {
    EXPECT_EQ(model.admit(kStart, 1500).verdict, Verdict::kDeliver);
  }
}

TEST(LinkModel, LossRateWithinBinomialMargin) {
  constexpr int kPackets = 200000;
  DirectionModel model(params_with(0, 0, 1000, 5.0), 42);
  int lost = 0;
  for (int i = 0; i < kPackets; ++i) {
    lost += model.admit(kStart + i, 100).verdict == Verdict::kLossDrop ? 1 : 0;
  }
  const double sigma = std::sqrt(kPackets * 0.05 * 0.95);
  EXPECT_NEAR(lost, kPackets * 0.05, 4 * sigma);
}

TEST(LinkModel, LossIsReproducibleFromTheSeed) {
  auto pattern = [](std::uint64_t seed) {
    DirectionModel model(params_with(0, 0, 1000, 30.0), seed);
    std::string verdicts;
    for (int i = 0; i < 64; ++i) {
      verdicts += model.admit(kStart + i, 100).verdict == Verdict::kLossDrop ? 'x' : '.';
    }
    return verdicts;
  };
  EXPECT_EQ(pattern(7), pattern(7));
  EXPECT_NE(pattern(7), pattern(8));
}

TEST(LinkModel, NoLossAndTotalLoss) {
  DirectionModel none(params_with(0, 0, 1000, 0.0), 1);
  DirectionModel all(params_with(0, 0, 1000, 100.0), 1);
  for (int i = 0; i < 1000; ++i) {
    EXPECT_EQ(none.admit(kStart + i, 100).verdict, Verdict::kDeliver);
    EXPECT_EQ(all.admit(kStart + i, 100).verdict, Verdict::kLossDrop);
  }
}

TEST(LinkModel, LostPacketsStillUseTheLink) {
  // Corrupted on the wire, not refused: they occupy the queue and the serializer like any packet.
  DirectionModel model(params_with(0, 1000000, 2, 100.0), 1);
  int lost = 0;
  int refused = 0;
  for (int i = 0; i < 5; ++i) {
    const Verdict verdict = model.admit(kStart, 1250).verdict;
    lost += verdict == Verdict::kLossDrop ? 1 : 0;
    refused += verdict == Verdict::kQueueDrop ? 1 : 0;
  }
  EXPECT_EQ(lost, 3);
  EXPECT_EQ(refused, 2);
}

TEST(LinkModel, JitterNeverReordersAndStaysInRange) {
  constexpr std::int64_t kDelay = 20 * kMs;
  constexpr std::int64_t kJitter = 5 * kMs;
  DirectionModel model(params_with(kDelay, 0, 1000, 0, kJitter), 3);
  std::int64_t previous = 0;
  double sum_sparse = 0;
  int sparse = 0;
  for (int i = 0; i < 20000; ++i) {
    // Every 100 us: much denser than the jitter, so the no-reordering rule is exercised.
    const std::int64_t now = kStart + i * (100 * kUs);
    const std::int64_t at = model.admit(now, 100).deliver_at_ns;
    EXPECT_GE(at, previous);
    EXPECT_GE(at, now + kDelay - kJitter);
    EXPECT_LE(at, std::max(previous, now + kDelay + kJitter));
    previous = at;
  }
  // Sparse packets (one per 50 ms, beyond the jitter span) see delay +- jitter with mean delay.
  DirectionModel sparse_model(params_with(kDelay, 0, 1000, 0, kJitter), 4);
  std::int64_t min_delay = INT64_MAX;
  std::int64_t max_delay = 0;
  for (int i = 0; i < 4000; ++i) {
    const std::int64_t now = kStart + i * (50 * kMs);
    const std::int64_t delay = sparse_model.admit(now, 100).deliver_at_ns - now;
    sum_sparse += static_cast<double>(delay);
    ++sparse;
    min_delay = std::min(min_delay, delay);
    max_delay = std::max(max_delay, delay);
  }
  EXPECT_NEAR(sum_sparse / sparse, static_cast<double>(kDelay), 0.2 * kMs);
  EXPECT_LT(min_delay, kDelay - 4 * kMs);
  EXPECT_GT(max_delay, kDelay + 4 * kMs);
}

TEST(LinkModel, JitterLargerThanDelayClampsAtZero) {
  DirectionModel model(params_with(1 * kMs, 0, 1000, 0, 10 * kMs), 5);
  for (int i = 0; i < 1000; ++i) {
    const std::int64_t now = kStart + i * (100 * kMs);
    EXPECT_GE(model.admit(now, 100).deliver_at_ns, now);
  }
}

TEST(LinkModel, RngIsUniform) {
  Rng rng(123);
  double sum = 0;
  for (int i = 0; i < 100000; ++i) {
    const double u = rng.uniform();
    ASSERT_GE(u, 0.0);
    ASSERT_LT(u, 1.0);
    sum += u;
  }
  EXPECT_NEAR(sum / 100000, 0.5, 0.005);
}

}  // namespace
}  // namespace tcptune::linkem
