// The histogram against exact percentiles of known distributions: every reported percentile
// must be within 6% of the sorted reference, from 100 ns to 60 s.
#include "latency_histogram.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <thread>
#include <vector>

namespace tcptune::telemetry {
namespace {

double exact_percentile(std::vector<std::uint64_t> values, double p) {
  std::sort(values.begin(), values.end());
  auto rank = static_cast<std::size_t>(std::ceil(p / 100.0 * static_cast<double>(values.size())));
  rank = std::clamp<std::size_t>(rank, 1, values.size());
  return static_cast<double>(values[rank - 1]);
}

void expect_percentiles_within_6_percent(const std::vector<std::uint64_t>& values) {
  LatencyHistogram histogram;
  for (const std::uint64_t v : values) {
    histogram.record(v);
  }
  ASSERT_EQ(histogram.count(), values.size());
  for (const double p : {0.0, 1.0, 10.0, 25.0, 50.0, 75.0, 90.0, 99.0, 99.9, 100.0}) {
    const double exact = exact_percentile(values, p);
    EXPECT_NEAR(histogram.percentile_ns(p), exact, 0.06 * exact) << "p" << p;
  }
}

TEST(HistogramLayout, AdjacentBoundsDifferByAtMostTheSixthRootOfTwo) {
  for (int bucket = 1; bucket < HistogramLayout::kOverflowBucket; ++bucket) {
    const double low = HistogramLayout::lower_bound(bucket);
    const double high = HistogramLayout::upper_bound(bucket);
    ASSERT_GT(high, low) << bucket;
    EXPECT_LE(high / low, 1.1225) << bucket;
    // The representative is within 5.8% of both ends, so of everything between.
    const double r = HistogramLayout::representative(bucket);
    EXPECT_LE((r - low) / low, 0.058) << bucket;
    EXPECT_LE((high - r) / high, 0.058) << bucket;
  }
}

TEST(HistogramLayout, EveryValueLandsInTheBucketWhoseBoundsHoldIt) {
  std::mt19937_64 random(7);
  std::uniform_int_distribution<int> octave(6, 35);
  for (int i = 0; i < 200000; ++i) {
    const std::uint64_t base = std::uint64_t{1} << octave(random);
    const std::uint64_t value = base + random() % base;
    const int bucket = HistogramLayout::bucket_of(value);
    ASSERT_LE(HistogramLayout::lower_bound(bucket), static_cast<double>(value) * (1 + 1e-9)) << value;
    ASSERT_GT(HistogramLayout::upper_bound(bucket), static_cast<double>(value) * (1 - 2e-5)) << value;
  }
  EXPECT_EQ(HistogramLayout::bucket_of(0), HistogramLayout::kUnderflowBucket);
  EXPECT_EQ(HistogramLayout::bucket_of(63), HistogramLayout::kUnderflowBucket);
  EXPECT_EQ(HistogramLayout::bucket_of(64), 1);
  EXPECT_EQ(HistogramLayout::bucket_of(UINT64_MAX), HistogramLayout::kOverflowBucket);
  EXPECT_EQ(HistogramLayout::bucket_of(HistogramLayout::kHighestNs - 1), HistogramLayout::kOverflowBucket - 1);
}

TEST(LatencyHistogram, UniformFrom100nsTo60s) {
  std::mt19937_64 random(1);
  std::uniform_int_distribution<std::uint64_t> uniform(100, 60'000'000'000ULL);
  std::vector<std::uint64_t> values(100000);
  std::generate(values.begin(), values.end(), [&] { return uniform(random); });
  expect_percentiles_within_6_percent(values);
}

TEST(LatencyHistogram, LogUniformAcrossTheWholeRange) {
  std::mt19937_64 random(2);
  std::uniform_real_distribution<double> exponent(std::log(100.0), std::log(60e9));
  std::vector<std::uint64_t> values(100000);
  std::generate(values.begin(), values.end(), [&] { return static_cast<std::uint64_t>(std::exp(exponent(random))); });
  expect_percentiles_within_6_percent(values);
}

TEST(LatencyHistogram, LogNormalWriteLatencies) {
  std::mt19937_64 random(3);
  std::lognormal_distribution<double> lognormal(std::log(2000.0), 1.0);  // around 2 us
  std::vector<std::uint64_t> values(100000);
  std::generate(values.begin(), values.end(),
                [&] { return std::max<std::uint64_t>(100, static_cast<std::uint64_t>(lognormal(random))); });
  expect_percentiles_within_6_percent(values);
}

TEST(LatencyHistogram, BimodalNagleStalls) {
  // 90% fast writes near 5 us, 10% stalls near 40 ms: p90 and p99 fall in different modes.
  std::mt19937_64 random(4);
  std::normal_distribution<double> fast(5000, 500);
  std::normal_distribution<double> stall(40e6, 1e6);
  std::vector<std::uint64_t> values;
  for (int i = 0; i < 50000; ++i) {
    values.push_back(static_cast<std::uint64_t>(i % 10 == 0 ? stall(random) : fast(random)));
  }
  expect_percentiles_within_6_percent(values);
}

TEST(LatencyHistogram, EmptyAndSingleValue) {
  LatencyHistogram histogram;
  EXPECT_EQ(histogram.percentile_ns(50), 0);
  histogram.record(123456);
  EXPECT_EQ(histogram.percentile_ns(0), 123456);
  EXPECT_EQ(histogram.percentile_ns(100), 123456);
  EXPECT_EQ(histogram.min_ns(), 123456U);
}

TEST(LatencyHistogram, MergeAddsCounts) {
  LatencyHistogram a;
  LatencyHistogram b;
  a.record(1000);
  b.record(1'000'000);
  b.record(2'000'000);
  a.merge(b);
  EXPECT_EQ(a.count(), 3U);
  EXPECT_EQ(a.min_ns(), 1000U);
  EXPECT_EQ(a.max_ns(), 2'000'000U);
}

TEST(ConnectionWriteHistogram, FitsTheConnectionBudget) {
  EXPECT_LE(sizeof(ConnectionWriteHistogram), 384U);
}

TEST(ConnectionWriteHistogram, CarriesWrapIntoTheWorkersHighParts) {
  ConnectionWriteHistogram per_connection;
  LatencyHistogram worker;  // receives the carries, as the worker thread would
  const std::uint64_t writes = 3 * ConnectionWriteHistogram::kCarryUnit + 17;
  for (std::uint64_t i = 0; i < writes; ++i) {
    const int carried = per_connection.record(1500);
    if (carried != ConnectionWriteHistogram::kNoCarry) {
      worker.add(carried, ConnectionWriteHistogram::kCarryUnit);
    }
  }
  per_connection.record(90'000'000);
  per_connection.merged_into(worker);
  EXPECT_EQ(worker.count(), writes + 1);
  EXPECT_EQ(worker.bucket_count(HistogramLayout::bucket_of(1500)), writes);
  EXPECT_EQ(worker.min_ns(), 1500U);
  EXPECT_EQ(worker.max_ns(), 90'000'000U);
  EXPECT_NEAR(worker.percentile_ns(50), 1500, 45);
}

TEST(ConnectionWriteHistogram, ResetEmptiesWhatWasRecordedAndLeavesAnEmptyOneEmpty) {
  ConnectionWriteHistogram per_connection;
  for (const std::uint64_t ns : {0U, 700U, 1'500U, 90'000'000U}) {  // 0 ns too: the minimum still moves
    per_connection.record(ns);
    per_connection.reset();
    LatencyHistogram after;
    per_connection.merged_into(after);
    EXPECT_EQ(after.count(), 0U) << ns;
    per_connection.reset();  // nothing recorded since: stays empty
    per_connection.merged_into(after);
    EXPECT_EQ(after.count(), 0U) << ns;
  }
  per_connection.record(2'000);
  LatencyHistogram kept;
  per_connection.merged_into(kept);
  EXPECT_EQ(kept.count(), 1U);
  EXPECT_EQ(kept.min_ns(), 2'000U);
  EXPECT_EQ(kept.max_ns(), 2'000U);
}

TEST(ConnectionWriteHistogram, ConcurrentWritersLoseNoCounts) {
  ConnectionWriteHistogram per_connection;
  std::atomic<std::uint64_t> carried{0};
  std::vector<std::thread> threads;
  constexpr int kThreads = 4;
  constexpr int kPerThread = 100000;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        if (per_connection.record(1000 + static_cast<std::uint64_t>(t)) != ConnectionWriteHistogram::kNoCarry) {
          carried.fetch_add(ConnectionWriteHistogram::kCarryUnit);
        }
      }
    });
  }
  for (auto& thread : threads) {
    thread.join();
  }
  LatencyHistogram worker;
  worker.add(HistogramLayout::bucket_of(1000), carried.load());
  per_connection.merged_into(worker);
  EXPECT_EQ(worker.count(), std::uint64_t{kThreads} * kPerThread);
}

}  // namespace
}  // namespace tcptune::telemetry
