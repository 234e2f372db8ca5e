// How a process tells a tcptune supervisor above it that the preloaded shim's core tunes it.
// Supervised mode keeps the shim in LD_PRELOAD (a glibc program a musl one starts is preloaded),
// and the seccomp filter is inherited by every descendant: without this, a glibc process there
// would be tuned and logged by both. `tcptune run` sets kSupervisedEnv in the supervised
// program's environment; a process whose core becomes active under it writes a CoreMarker into
// the core's own memory and calls connect(kAnnouncementFd, &marker, sizeof marker), a call the
// supervisor's filter always traps. The supervisor answers 0 and, from then on, leaves that
// process's calls to its core while the marker is still at that address in it: an exec
// replaces the memory (the new program is supervised again unless its own core announces
// itself), and a forked child, which inherits the core, announces itself again. Without a
// supervisor the call fails with EBADF and does nothing.
#pragma once

#include <cstdint>

namespace tcptune::config {

inline constexpr const char* kSupervisedEnv = "TCPTUNE_SUPERVISED";

// Negative: the kernel answers EBADF wherever no supervisor takes the call.
inline constexpr int kAnnouncementFd = -0x54435054;  // "TCPT"

// At a fixed place in the core's memory for the life of its process image. `self` is its own
// address, so that memory that merely holds the two magic numbers elsewhere never counts.
struct CoreMarker {
  std::uint64_t magic[2];
  std::uint64_t self;
};

inline constexpr std::uint64_t kCoreMarkerMagic[2] = {0x74637074756e6521ULL, 0x636f72652d6f6e21ULL};

// Whether `marker`, read at `address`, is an active core's.
inline bool is_core_marker(const CoreMarker& marker, std::uint64_t address) noexcept {
  return marker.magic[0] == kCoreMarkerMagic[0] && marker.magic[1] == kCoreMarkerMagic[1] && marker.self == address;
}

}  // namespace tcptune::config
