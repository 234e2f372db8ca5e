#include "supervisor_announcement.hpp"

#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "errno_saver.hpp"
#include "tcptune/config/core_announcement.hpp"

namespace tcptune::shim {

namespace {

// In the core's own memory, written once, before the first announcement: its address is what
// the supervisor checks at each call of this process (an exec replaces it).
config::CoreMarker g_marker{};
std::atomic<bool> g_announced{false};

// A raw call: the marker is for the supervisor's filter, not for a hook or a library's wrapper.
bool make_announcement() noexcept {
  const ErrnoSaver saver;
  return syscall(SYS_connect, config::kAnnouncementFd, &g_marker, sizeof g_marker) == 0;
}

}  // namespace

bool announce_to_supervisor() noexcept {
  // Read also in secure execution, unlike the other TCPTUNE_ variables: it decides one call that
  // fails with EBADF wherever no supervisor of the user's own takes it, and a user cannot put one
  // on a program that gains privileges (that needs no_new_privs, which drops them).
  const char* supervised = std::getenv(config::kSupervisedEnv);
  if (supervised == nullptr || std::strcmp(supervised, "1") != 0) {
    return false;
  }
  g_marker.magic[0] = config::kCoreMarkerMagic[0];
  g_marker.magic[1] = config::kCoreMarkerMagic[1];
  g_marker.self = reinterpret_cast<std::uintptr_t>(&g_marker);
  // Before the call: a child forked while it is made announces itself too.
  g_announced.store(true, std::memory_order_release);
  return make_announcement();
}

void announce_to_supervisor_after_fork() noexcept {
  if (g_announced.load(std::memory_order_acquire)) {
    (void)make_announcement();
  }
}

}  // namespace tcptune::shim
