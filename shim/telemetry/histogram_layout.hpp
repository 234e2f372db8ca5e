// Bucket layout shared by every latency histogram: log-linear in nanoseconds, 6 buckets per
// power of two from 64 ns to 2^36 ns (68.7 s), plus one bucket below and one above. Adjacent
// bounds differ by a factor of at most 2^(1/6), so reporting a bucket by the value
// 2ab/(a+b) between its bounds a and b is off by at most (r-1)/(r+1) = 5.8% of any value in it
// (six per octave rather than twelve keeps a connection's 16-bit histogram at 364 bytes).
// Indexing is integer-only (no libm, no floating point): a leading-zero count and at most
// three comparisons, cheap and async-signal-safe enough for the write path.
#pragma once

#include <array>
#include <bit>
#include <cstdint>

namespace tcptune::telemetry {

struct HistogramLayout {
  static constexpr int kBucketsPerOctave = 6;
  static constexpr int kFirstOctave = 6;  // 2^6 = 64 ns
  static constexpr int kOctaves = 30;     // up to 2^36 ns
  static constexpr int kBuckets = kOctaves * kBucketsPerOctave + 2;
  static constexpr int kUnderflowBucket = 0;
  static constexpr int kOverflowBucket = kBuckets - 1;
  static constexpr std::uint64_t kLowestNs = std::uint64_t{1} << kFirstOctave;
  static constexpr std::uint64_t kHighestNs = std::uint64_t{1} << (kFirstOctave + kOctaves);

  // round(2^(i/6) * 2^16): where each bucket of an octave starts, as a 16.16 mantissa.
  static constexpr std::array<std::uint32_t, kBucketsPerOctave + 1> kMantissaStarts = {65536, 73562,  82570, 92682,
                                                                                        104032, 116772, 131072};

  static constexpr int bucket_of(std::uint64_t ns) noexcept {
    if (ns < kLowestNs) {
      return kUnderflowBucket;
    }
    if (ns >= kHighestNs) {
      return kOverflowBucket;
    }
    const int octave = 63 - std::countl_zero(ns);
    const auto mantissa = octave <= 16 ? static_cast<std::uint32_t>(ns << (16 - octave))
                                       : static_cast<std::uint32_t>(ns >> (octave - 16));
    // Binary search over the 6 starts: the largest i with kMantissaStarts[i] <= mantissa.
    int sub = 0;
    for (int step = 4; step > 0; step /= 2) {
      const int next = sub + step;
      if (next < kBucketsPerOctave && kMantissaStarts[static_cast<std::size_t>(next)] <= mantissa) {
        sub = next;
      }
    }
    return 1 + (octave - kFirstOctave) * kBucketsPerOctave + sub;
  }

  // Bounds of a bucket in nanoseconds, [lower, upper); the outer buckets are [0, 64) and
  // [2^36, 2^36] (everything above is reported as 2^36 ns, the histogram's ceiling).
  static constexpr double lower_bound(int bucket) noexcept {
    if (bucket <= kUnderflowBucket) {
      return 0;
    }
    if (bucket >= kOverflowBucket) {
      return static_cast<double>(kHighestNs);
    }
    const int index = bucket - 1;
    const int octave = kFirstOctave + index / kBucketsPerOctave;
    const auto start = kMantissaStarts[static_cast<std::size_t>(index % kBucketsPerOctave)];
    return static_cast<double>(std::uint64_t{1} << octave) * static_cast<double>(start) / 65536.0;
  }
  static constexpr double upper_bound(int bucket) noexcept {
    return bucket >= kOverflowBucket ? static_cast<double>(kHighestNs) : lower_bound(bucket + 1);
  }
  // The value that reports a bucket with the least worst-case relative error.
  static constexpr double representative(int bucket) noexcept {
    const double low = lower_bound(bucket);
    const double high = upper_bound(bucket);
    return low + high > 0 ? 2 * low * high / (low + high) : 0;
  }
};

}  // namespace tcptune::telemetry
