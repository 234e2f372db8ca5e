// The write path's clock: CLOCK_MONOTONIC nanoseconds, read from the TSC where the kernel
// itself keeps time with it (clocksource "tsc", or "kvm-clock", which is the TSC scaled by the
// hypervisor's factors) on a CPU with an invariant TSC, at well under half of clock_gettime's
// cost; a measured write reads it twice. The telemetry worker calibrates the TSC against
// CLOCK_MONOTONIC and re-anchors it every second, so readings stay within microseconds of
// monotonic_ns() and follow NTP's slewing; a TSC that stops agreeing with CLOCK_MONOTONIC
// (a jump, a changed rate) is dropped. Before the first calibration, and wherever the TSC is
// not trusted, it is clock_gettime.
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>

#include "monotonic_clock.hpp"

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

namespace tcptune::shim {

// Both clocks read at (nearly) the same moment.
struct ClockPoint {
  std::uint64_t tsc = 0;
  std::int64_t ns = 0;
};

// The products of 64-bit tick counts and 32.32 fixed-point factors.
__extension__ typedef __int128 WideInt;
__extension__ typedef unsigned __int128 WideUint;

// ns = base.ns + (tsc - base.tsc) * ns_per_tick, with ns_per_tick in 32.32 fixed point.
struct TscScale {
  ClockPoint base;
  std::uint64_t ns_per_tick_q32 = 0;
};

inline std::int64_t tsc_to_ns(const TscScale& scale, std::uint64_t tsc) noexcept {
  // Signed: a CPU may read a TSC a few ticks behind the anchor another CPU took.
  const auto ticks = static_cast<std::int64_t>(tsc - scale.base.tsc);
  return scale.base.ns + static_cast<std::int64_t>((static_cast<WideInt>(ticks) * scale.ns_per_tick_q32) >> 32);
}

// The scale that maps `from` onto `to`, anchored at `to`. None when the span is too short to be
// accurate (under 5 ms), runs backwards, or implies a TSC outside 10 MHz..100 GHz.
std::optional<TscScale> scale_between(ClockPoint from, ClockPoint to) noexcept;

// A TscScale published by one thread (the worker) and read by any, signal handlers included:
// a sequence counter instead of a lock, and a reader that meets an update in progress reads
// clock_gettime instead of waiting.
class WriteClock {
 public:
  std::int64_t now_ns() const noexcept {
#if defined(__x86_64__)
    const std::uint32_t before = sequence_.load(std::memory_order_acquire);
    if (before != 0 && (before & 1U) == 0) [[likely]] {
      const std::uint64_t tsc = __rdtsc();
      // Acquire loads (plain loads on x86): the sequence is read again only after them, and a
      // value from an update in progress makes that read see the update's odd sequence.
      const TscScale scale{{base_tsc_.load(std::memory_order_acquire), base_ns_.load(std::memory_order_acquire)},
                           ns_per_tick_q32_.load(std::memory_order_acquire)};
      if (sequence_.load(std::memory_order_relaxed) == before) {
        return tsc_to_ns(scale, tsc);
      }
    }
#endif
    return monotonic_ns();
  }

  bool uses_tsc() const noexcept {
    return sequence_.load(std::memory_order_acquire) != 0;
  }

  // One writer at a time.
  void publish(const TscScale& scale) noexcept {
    const std::uint32_t sequence = sequence_.load(std::memory_order_relaxed);
    sequence_.store(sequence + 1, std::memory_order_relaxed);
    // Release stores: a reader that sees any new value also sees the odd sequence before it.
    base_tsc_.store(scale.base.tsc, std::memory_order_release);
    base_ns_.store(scale.base.ns, std::memory_order_release);
    ns_per_tick_q32_.store(scale.ns_per_tick_q32, std::memory_order_release);
    sequence_.store(sequence + 2, std::memory_order_release);
  }

  // Back to clock_gettime (a forked child, whose parent's worker may have been mid-update).
  void reset() noexcept {
    sequence_.store(0, std::memory_order_release);
  }

 private:
  std::atomic<std::uint32_t> sequence_{0};  // 0: not calibrated; odd: being updated
  std::atomic<std::uint64_t> base_tsc_{0};
  std::atomic<std::int64_t> base_ns_{0};
  std::atomic<std::uint64_t> ns_per_tick_q32_{0};
};

inline constinit WriteClock g_write_clock;

inline std::int64_t write_clock_ns() noexcept {
  return g_write_clock.now_ns();
}

// How far a published scale's reading may stray from CLOCK_MONOTONIC by its next calibration:
// NTP slews at most 500 ppm, so 1000 ppm of the span plus 50 us is a TSC that jumped or
// changed its rate (a virtual machine restored or moved to another host), not slewing.
inline constexpr std::int64_t kDriftAllowanceNs = 50'000;
inline constexpr std::int64_t kDriftAllowancePerMillion = 1000;
// After this many such disagreements the TSC is not used again in this process.
inline constexpr int kMaxDisagreements = 3;

// Whether `scale`, published at its base, still reads `point.tsc` as `point.ns`, within the
// drift allowance for the time since.
bool scale_agrees(const TscScale& scale, ClockPoint point) noexcept;

// Keeps a WriteClock calibrated; the telemetry worker calls tick() on every pass.
class WriteClockCalibrator {
 public:
  // `tsc_trusted`: whether this machine's TSC may stand in for CLOCK_MONOTONIC at all.
  WriteClockCalibrator(WriteClock& clock, bool tsc_trusted) noexcept : clock_(clock), trusted_(tsc_trusted) {}

  void tick(std::int64_t now_ns) noexcept;
  // One calibration at `point` (tick() reads it); for tests.
  void calibrate_at(ClockPoint point) noexcept;
  [[nodiscard]] bool trusted() const noexcept { return trusted_; }

 private:
  WriteClock& clock_;
  bool trusted_;
  std::optional<ClockPoint> anchor_;
  std::optional<TscScale> published_;
  int disagreements_ = 0;
  std::int64_t next_ns_ = 0;
};

// Whether the kernel keeps time with the TSC here and the CPU says it is invariant.
bool tsc_trusted() noexcept;

// Both clocks, read as close together as three tries allow.
ClockPoint read_clock_point() noexcept;

}  // namespace tcptune::shim
