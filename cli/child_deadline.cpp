#include "child_deadline.hpp"

#include <poll.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>

namespace tcptune::cli {
namespace {

using Clock = std::chrono::steady_clock;

// True once `child` has ended (not reaped), or the time is up. A pidfd says it without
// polling; where there is none (before Linux 5.3), a look every 10 ms.
bool ended_by(pid_t child, int pidfd, Clock::time_point deadline) {
  for (;;) {
    constexpr long long kLongestPollMs = 3'600'000;  // poll's int, for any deadline
    const long long left = std::min<long long>(
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count(), kLongestPollMs);
    if (left <= 0) {
      siginfo_t info{};
      return waitid(P_PID, static_cast<id_t>(child), &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid != 0;
    }
    if (pidfd >= 0) {
      pollfd ready{pidfd, POLLIN, 0};
      const int got = poll(&ready, 1, static_cast<int>(left));
      if (got > 0) {
        return true;
      }
      if (got < 0 && errno != EINTR) {
        return false;
      }
      continue;
    }
    siginfo_t info{};
    if (waitid(P_PID, static_cast<id_t>(child), &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid != 0) {
      return true;
    }
    (void)usleep(10'000);
  }
}

int reap(pid_t child) {
  int status = 0;
  while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  return status;
}

}  // namespace

DeadlineWait wait_with_deadline(pid_t child, double seconds, double grace_seconds) {
  DeadlineWait result;
  const int pidfd = static_cast<int>(syscall(SYS_pidfd_open, child, 0));
  const auto start = Clock::now();
  const auto after = [&](double s) {
    return start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
  };
  if (!ended_by(child, pidfd, after(seconds))) {
    result.timed_out = true;
    (void)kill(child, SIGTERM);
    if (!ended_by(child, pidfd, after(seconds + grace_seconds))) {
      (void)kill(child, SIGKILL);
    }
  }
  if (pidfd >= 0) {
    (void)close(pidfd);
  }
  result.status = reap(child);
  return result;
}

}  // namespace tcptune::cli
