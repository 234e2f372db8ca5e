// The write clock: TSC-to-nanosecond arithmetic, calibration, and a WriteClock read while it is
// being re-anchored.
#include "write_clock.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <thread>
#include <vector>

namespace tcptune::shim {
namespace {

constexpr std::uint64_t kQ32One = std::uint64_t{1} << 32;

TEST(TscScale, ConvertsBothWaysFromTheAnchor) {
  const TscScale half_ns_per_tick{{1'000'000, 5'000'000'000}, kQ32One / 2};  // a 2 GHz TSC
  EXPECT_EQ(tsc_to_ns(half_ns_per_tick, 1'000'000), 5'000'000'000);
  EXPECT_EQ(tsc_to_ns(half_ns_per_tick, 1'002'000), 5'000'001'000);
  EXPECT_EQ(tsc_to_ns(half_ns_per_tick, 998'000), 4'999'999'000) << "a reading a little behind the anchor";
}

TEST(TscScale, HoursAwayWithoutOverflow) {
  const TscScale scale{{0, 0}, kQ32One / 3};  // a 3 GHz TSC
  const std::uint64_t ten_hours_of_ticks = 3'000'000'000ULL * 36'000;
  // 1/3 in 32.32 fixed point is 2.3e-10 short: 8 us in ten hours (the worker re-anchors every second).
  EXPECT_NEAR(static_cast<double>(tsc_to_ns(scale, ten_hours_of_ticks)), 36e12, 10'000);
}

TEST(ScaleBetween, RecoversTheFrequency) {
  // A 2.5 GHz TSC observed over 10 ms.
  const ClockPoint from{7'000, 100'000'000};
  const ClockPoint to{7'000 + 25'000'000, 110'000'000};
  const auto scale = scale_between(from, to);
  ASSERT_TRUE(scale.has_value());
  EXPECT_EQ(scale->base.tsc, to.tsc);
  EXPECT_EQ(scale->base.ns, to.ns);
  EXPECT_LE(std::llabs(tsc_to_ns(*scale, to.tsc + 2'500'000'000ULL) - (to.ns + 1'000'000'000)), 1);
  EXPECT_LE(std::llabs(tsc_to_ns(*scale, from.tsc) - from.ns), 1);
}

TEST(ScaleBetween, RefusesWhatCannotBeRight) {
  EXPECT_FALSE(scale_between({0, 0}, {10'000'000, 4'000'000})) << "a span under 5 ms";
  EXPECT_FALSE(scale_between({10'000'000, 0}, {5'000'000, 10'000'000})) << "the TSC ran backwards";
  EXPECT_FALSE(scale_between({0, 0}, {10, 10'000'000})) << "1 kHz";
  EXPECT_FALSE(scale_between({0, 0}, {10'000'000'000'000, 10'000'000})) << "1 PHz";
}

TEST(ScaleAgrees, AllowsSlewingNotAJump) {
  const TscScale scale{{1'000'000'000, 1'000'000'000}, kQ32One};  // 1 GHz, anchored at 1 s
  const std::uint64_t second = 1'000'000'000;
  EXPECT_TRUE(scale_agrees(scale, {scale.base.tsc + second, 2'000'000'000}));
  EXPECT_TRUE(scale_agrees(scale, {scale.base.tsc + second, 2'000'500'000})) << "500 ppm: NTP's fastest slew";
  EXPECT_TRUE(scale_agrees(scale, {scale.base.tsc + second, 1'999'500'000}));
  EXPECT_FALSE(scale_agrees(scale, {scale.base.tsc + second, 2'002'000'000})) << "2 ms in a second";
  EXPECT_FALSE(scale_agrees(scale, {scale.base.tsc + 3 * second, 2'000'000'000})) << "the TSC jumped 2 s ahead";
  EXPECT_TRUE(scale_agrees(scale, {scale.base.tsc + 1'000, 1'000'001'000}));
  EXPECT_FALSE(scale_agrees(scale, {scale.base.tsc + 1'000, 1'000'101'000})) << "100 us off at once";
}

// Synthetic points (a 1 GHz TSC), so that this runs on any machine: a calibration publishes,
// one that agrees keeps the clock on the TSC, one that does not puts it back on clock_gettime
// until the next, and the third disagreement ends the TSC's use for good.
TEST(WriteClockCalibrator, DropsATscThatStopsAgreeing) {
  WriteClock clock;
  WriteClockCalibrator calibrator(clock, true);
  std::uint64_t tsc = 5'000'000'000;
  std::int64_t ns = 7'000'000'000;
  const auto advance = [&](std::int64_t tsc_ns, std::int64_t monotonic_step_ns) {
    tsc += static_cast<std::uint64_t>(tsc_ns);
    ns += monotonic_step_ns;
    calibrator.calibrate_at({tsc, ns});
  };
  calibrator.calibrate_at({tsc, ns});
  EXPECT_FALSE(clock.uses_tsc());
  advance(20'000'000, 20'000'000);
  ASSERT_TRUE(clock.uses_tsc());
  advance(1'000'000'000, 1'000'000'000);
  EXPECT_TRUE(clock.uses_tsc()) << "agreeing";
  for (int disagreement = 1; disagreement <= kMaxDisagreements; ++disagreement) {
    advance(1'000'000'000, 1'010'000'000);  // 10 ms in a second: not slewing
    EXPECT_FALSE(clock.uses_tsc()) << "disagreement " << disagreement;
    advance(20'000'000, 20'000'000);
    EXPECT_EQ(clock.uses_tsc(), disagreement < kMaxDisagreements) << "after disagreement " << disagreement;
    advance(1'000'000'000, 1'000'000'000);
  }
  EXPECT_FALSE(calibrator.trusted());
  EXPECT_FALSE(clock.uses_tsc());
}

TEST(WriteClock, UncalibratedIsClockGettime) {
  const WriteClock clock;
  EXPECT_FALSE(clock.uses_tsc());
  const std::int64_t before = monotonic_ns();
  const std::int64_t reading = clock.now_ns();
  EXPECT_GE(reading, before);
  EXPECT_LE(reading, monotonic_ns());
}

#if defined(__x86_64__)
// Whether `reading` was taken between `before` and `after` on CLOCK_MONOTONIC, give or take.
::testing::AssertionResult within(std::int64_t before, std::int64_t reading, std::int64_t after,
                                  std::int64_t slack_ns) {
  if (reading >= before - slack_ns && reading <= after + slack_ns) {
    return ::testing::AssertionSuccess();
  }
  return ::testing::AssertionFailure() << reading << " is not within " << slack_ns << " ns of [" << before << ", "
                                       << after << "]";
}

TEST(WriteClock, CalibratedAgreesWithClockGettime) {
  if (!tsc_trusted()) {
    GTEST_SKIP() << "the kernel does not keep time with the TSC here";
  }
  WriteClock clock;
  WriteClockCalibrator calibrator(clock, true);
  calibrator.tick(monotonic_ns());
  EXPECT_FALSE(clock.uses_tsc()) << "one point is not a calibration";
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  calibrator.tick(monotonic_ns());
  ASSERT_TRUE(clock.uses_tsc());
  for (int i = 0; i < 1000; ++i) {
    const std::int64_t before = monotonic_ns();
    const std::int64_t reading = clock.now_ns();
    const std::int64_t after = monotonic_ns();
    ASSERT_TRUE(within(before, reading, after, 20'000)) << "reading " << i;
  }
  clock.reset();
  EXPECT_FALSE(clock.uses_tsc());
}

TEST(WriteClock, UntrustedStaysOnClockGettime) {
  WriteClock clock;
  WriteClockCalibrator calibrator(clock, false);
  calibrator.tick(monotonic_ns());
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  calibrator.tick(monotonic_ns());
  EXPECT_FALSE(clock.uses_tsc());
}

// Readers never see half of one anchor and half of another: the writer alternates two anchors
// 10 ms apart on the same line, so a torn reading would be 10 ms off.
TEST(WriteClock, ReadersNeverSeeATornUpdate) {
  if (!tsc_trusted()) {
    GTEST_SKIP() << "the kernel does not keep time with the TSC here";
  }
  const ClockPoint first = read_clock_point();
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  const auto scale = scale_between(first, read_clock_point());
  ASSERT_TRUE(scale.has_value());
  TscScale later = *scale;
  later.base.tsc += (std::uint64_t{10'000'000} << 32) / scale->ns_per_tick_q32;
  later.base.ns = tsc_to_ns(*scale, later.base.tsc);

  WriteClock clock;
  clock.publish(*scale);
  std::atomic<bool> stop{false};
  std::thread writer([&] {
    for (std::uint64_t i = 0; !stop.load(std::memory_order_relaxed); ++i) {
      clock.publish(i % 2 == 0 ? later : *scale);
    }
  });
  std::vector<std::thread> readers;
  std::atomic<int> off{0};
  for (int r = 0; r < 2; ++r) {
    readers.emplace_back([&] {
      for (int i = 0; i < 200'000; ++i) {
        const std::int64_t before = monotonic_ns();
        const std::int64_t reading = clock.now_ns();
        const std::int64_t after = monotonic_ns();
        // Generous for preemption between the reads; a torn reading is 10 ms off.
        if (!within(before, reading, after, 2'000'000)) {
          off.fetch_add(1, std::memory_order_relaxed);
        }
      }
    });
  }
  for (std::thread& reader : readers) {
    reader.join();
  }
  stop.store(true, std::memory_order_relaxed);
  writer.join();
  EXPECT_EQ(off.load(), 0);
}
#endif

}  // namespace
}  // namespace tcptune::shim
