// CLOCK_MONOTONIC in nanoseconds: clock_gettime through the vDSO, async-signal-safe, errno
// untouched on success. Inline because the write path reads it twice per measured call.
#pragma once

#include <time.h>

#include <cstdint>

namespace tcptune::shim {

inline std::int64_t monotonic_ns() noexcept {
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<std::int64_t>(now.tv_sec) * 1'000'000'000 + now.tv_nsec;
}

}  // namespace tcptune::shim
