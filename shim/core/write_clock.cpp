#include "write_clock.hpp"

#include <string>

#include "tcptune/config/host_sysctl.hpp"

#if defined(__x86_64__)
#include <cpuid.h>
#endif

namespace tcptune::shim {

namespace {

constexpr std::int64_t kShortestSpanNs = 5'000'000;
constexpr std::int64_t kFirstCalibrationNs = 20'000'000;  // soon after the worker starts
constexpr std::int64_t kRecalibrationNs = 1'000'000'000;

}  // namespace

std::optional<TscScale> scale_between(ClockPoint from, ClockPoint to) noexcept {
  const std::int64_t span_ns = to.ns - from.ns;
  if (span_ns < kShortestSpanNs || to.tsc <= from.tsc) {
    return std::nullopt;
  }
  const std::uint64_t ticks = to.tsc - from.tsc;
  const auto ns_per_tick_q32 = static_cast<std::uint64_t>((static_cast<WideUint>(span_ns) << 32) / ticks);
  // 0.01 ns (100 GHz) to 100 ns (10 MHz) per tick.
  constexpr std::uint64_t kFastest = (std::uint64_t{1} << 32) / 100;
  constexpr std::uint64_t kSlowest = std::uint64_t{100} << 32;
  if (ns_per_tick_q32 < kFastest || ns_per_tick_q32 > kSlowest) {
    return std::nullopt;
  }
  return TscScale{to, ns_per_tick_q32};
}

ClockPoint read_clock_point() noexcept {
#if defined(__x86_64__)
  ClockPoint best;
  std::uint64_t best_width = ~std::uint64_t{0};
  for (int attempt = 0; attempt < 3; ++attempt) {
    const std::uint64_t before = __rdtsc();
    const std::int64_t ns = monotonic_ns();
    const std::uint64_t after = __rdtsc();
    // The narrowest bracket: the one least disturbed by an interrupt or preemption.
    if (after >= before && after - before < best_width) {
      best_width = after - before;
      best = {before + (after - before) / 2, ns};
    }
  }
  return best;
#else
  return {0, monotonic_ns()};
#endif
}

bool tsc_trusted() noexcept {
#if defined(__x86_64__)
  unsigned int eax = 0;
  unsigned int ebx = 0;
  unsigned int ecx = 0;
  unsigned int edx = 0;
  // CPUID 0x80000007 EDX bit 8: the TSC runs at a constant rate in every power state.
  if (__get_cpuid(0x80000007, &eax, &ebx, &ecx, &edx) == 0 || (edx & (1U << 8)) == 0) {
    return false;
  }
  try {
    // The kernel drops the TSC as its clocksource when it finds it unstable or unsynchronized
    // across CPUs; it stays trusted here only while the kernel keeps time with it: directly, or
    // through kvm-clock, which is the TSC scaled by factors the hypervisor publishes (a guest
    // may be told tsc=unstable so that it follows them across a migration: the calibration's
    // agreement check catches what they would have corrected).
    const auto source = config::read_sysctl("clocksource0/current_clocksource", "/sys/devices/system/clocksource");
    return source && (*source == "tsc" || *source == "kvm-clock");
  } catch (...) {
    return false;
  }
#else
  return false;
#endif
}

bool scale_agrees(const TscScale& scale, ClockPoint point) noexcept {
  const std::int64_t span_ns = point.ns - scale.base.ns;
  const std::int64_t error_ns = tsc_to_ns(scale, point.tsc) - point.ns;
  const std::int64_t allowed_ns =
      kDriftAllowanceNs + (span_ns > 0 ? span_ns / 1'000'000 * kDriftAllowancePerMillion : 0);
  return error_ns <= allowed_ns && error_ns >= -allowed_ns;
}

void WriteClockCalibrator::tick(std::int64_t now_ns) noexcept {
  if (!trusted_ || now_ns < next_ns_) {
    return;
  }
  calibrate_at(read_clock_point());
}

void WriteClockCalibrator::calibrate_at(ClockPoint point) noexcept {
  if (!trusted_) {
    return;
  }
  if (published_ && !scale_agrees(*published_, point)) {
    // Back to clock_gettime at once; calibrated again from this point, unless it keeps happening.
    clock_.reset();
    published_.reset();
    if (++disagreements_ >= kMaxDisagreements) {
      trusted_ = false;
      return;
    }
  } else if (anchor_) {
    if (const auto scale = scale_between(*anchor_, point)) {
      clock_.publish(*scale);
      published_ = scale;
    }
  }
  anchor_ = point;
  next_ns_ = point.ns + (published_ ? kRecalibrationNs : kFirstCalibrationNs);
}

}  // namespace tcptune::shim
