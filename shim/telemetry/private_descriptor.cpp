#include "private_descriptor.hpp"

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>

namespace tcptune::telemetry {

namespace {

// Room above the soft limit for every descriptor the shim may hold at once (the log on stderr
// takes three), so that a later copy finds a number free there too.
constexpr std::uint64_t kRoomAboveSoftLimit = 4;

struct Limit {
  std::uint64_t soft;
  std::uint64_t hard;
};

// prlimit64 on this process: sets `set` (unless null) and returns what it replaced, atomically.
bool exchange_limit(const Limit* set, Limit& old) noexcept {
  return syscall(SYS_prlimit64, 0, RLIMIT_NOFILE, set, &old) == 0;
}

}  // namespace

int copy_out_of_app_range(int fd, int floor) noexcept {
  const long copy = syscall(SYS_fcntl, fd, F_DUPFD_CLOEXEC, floor);
  if (copy >= 0) {
    return static_cast<int>(copy);
  }
  if (errno == EMFILE) {
    // Every number from `floor` up to a higher soft limit is taken: the app holds hundreds
    // of descriptors, and one more below is what the shim has always taken there.
    return static_cast<int>(syscall(SYS_fcntl, fd, F_DUPFD_CLOEXEC, 3));
  }
  Limit now{};
  if (errno != EINVAL || !exchange_limit(nullptr, now) || now.soft >= now.hard || now.soft >= INT32_MAX) {
    errno = EMFILE;
    return -1;
  }
  const std::uint64_t room = now.hard - now.soft < kRoomAboveSoftLimit ? now.hard - now.soft : kRoomAboveSoftLimit;
  const Limit raised{now.soft + room, now.hard};
  Limit before{};
  if (!exchange_limit(&raised, before)) {
    errno = EMFILE;
    return -1;
  }
  const long placed = syscall(SYS_fcntl, fd, F_DUPFD_CLOEXEC, static_cast<long>(before.soft));
  const int error = errno;
  Limit seen{};
  if (exchange_limit(&before, seen) && (seen.soft != raised.soft || seen.hard != raised.hard)) {
    (void)exchange_limit(&seen, before);  // another thread set the limit meanwhile: its value stays
  }
  if (placed < 0) {
    errno = error;
  }
  return static_cast<int>(placed);
}

}  // namespace tcptune::telemetry
