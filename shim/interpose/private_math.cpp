// fmt (inside spdlog) calls ceil(); with clang's driver that alone would make libtcptune.so
// depend on libm, and glibc's static libm cannot go into a shared object. This hidden
// definition serves the shim's own references and is never exported.
#include <cstdint>

extern "C" __attribute__((visibility("hidden"))) double ceil(double value) {
  constexpr double kIntegral = 4503599627370496.0;  // 2^52: from here on every double is whole
  if (!(value > -kIntegral && value < kIntegral)) {
    return value;  // NaN, infinities and large values are already integral
  }
  const auto truncated = static_cast<double>(static_cast<std::int64_t>(value));
  return truncated < value ? truncated + 1.0 : (truncated == 0.0 && value < 0 ? -0.0 : truncated);
}
