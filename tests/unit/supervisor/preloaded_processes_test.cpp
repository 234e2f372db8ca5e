// PreloadedProcesses against the kernel: a child under the supervisor's filter plays a process
// whose core announces itself (the marker in its memory, as shim/core/supervisor_announcement
// writes it), then changes its memory as an exec would and forks; the test answers each trapped
// call as CallTuner does and records what PreloadedProcesses made of it.
#include "preloaded_processes.hpp"

#include <gtest/gtest.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <string>

#include "fd_passing.hpp"
#include "seccomp_filter.hpp"
#include "tcptune/config/core_announcement.hpp"
#include "thread_handles.hpp"
#include "trapped_call.hpp"

namespace tcptune::supervisor {
namespace {

config::CoreMarker g_marker{};

long announce(const config::CoreMarker* marker) {
  return syscall(SYS_connect, config::kAnnouncementFd, marker, sizeof *marker);
}

// An ordinary trapped call: connect on a descriptor that is not open (EBADF when let through).
bool ordinary_call_fails_as_without_supervisor() {
  return syscall(SYS_connect, 1000, nullptr, 0) == -1 && errno == EBADF;
}

// In the child, under the filter: each step's own result is checked here; the first wrong one is
// the exit status.
int play_announced_process() {
  config::CoreMarker elsewhere{};
  elsewhere.magic[0] = config::kCoreMarkerMagic[0];
  elsewhere.magic[1] = config::kCoreMarkerMagic[1];
  elsewhere.self = reinterpret_cast<std::uintptr_t>(&g_marker);  // names another address: refused
  if (announce(&elsewhere) != -1 || errno != EBADF) {
    return 10;
  }
  if (!ordinary_call_fails_as_without_supervisor()) {
    return 11;
  }
  g_marker = elsewhere;
  g_marker.self = reinterpret_cast<std::uintptr_t>(&g_marker);
  if (announce(&g_marker) != 0) {
    return 12;
  }
  if (!ordinary_call_fails_as_without_supervisor()) {  // left alone: let through all the same
    return 13;
  }
  // A forked child has the marker but has not announced itself: a process of its own.
  const pid_t child = fork();
  if (child == 0) {
    _exit(ordinary_call_fails_as_without_supervisor() ? 0 : 1);
  }
  int status = 0;
  if (waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return 14;
  }
  g_marker.magic[0] = 0;  // the memory replaced, as by an exec
  if (!ordinary_call_fails_as_without_supervisor()) {
    return 15;
  }
  g_marker.magic[0] = config::kCoreMarkerMagic[0];  // forgotten until announced again
  if (!ordinary_call_fails_as_without_supervisor()) {
    return 16;
  }
  if (announce(&g_marker) != 0 || !ordinary_call_fails_as_without_supervisor()) {
    return 17;
  }
  return 0;
}

// What PreloadedProcesses made of each trapped call, in order: 'a' an announcement taken, 'n' one
// refused, 'c' a call left to the core, 's' one for the supervisor.
std::string verdicts_for_child(PreloadedProcesses& preloaded, int& child_status) {
  int channel[2];
  EXPECT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, channel), 0);
  const pid_t child = fork();
  if (child == 0) {
    close(channel[0]);
    const std::vector<sock_filter> filter = build_filter(FilterSpec{});
    sock_fprog program{static_cast<unsigned short>(filter.size()), const_cast<sock_filter*>(filter.data())};
    int listener = -1;
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0) {
      listener =
          static_cast<int>(syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &program));
    }
    if (listener < 0 || send_status(channel[1], 0, listener) != 0) {
      _exit(2);
    }
    close(listener);
    _exit(play_announced_process());
  }
  close(channel[1]);
  std::string verdicts;
  int status = 0;
  int listener = -1;
  ThreadHandles threads;
  if (receive_status(channel[0], status, listener) && listener >= 0) {
    for (;;) {
      pollfd ready{listener, POLLIN, 0};
      if (poll(&ready, 1, 5000) != 1 || (ready.revents & POLLIN) == 0) {
        break;  // POLLHUP: the child and its own child have exited
      }
      seccomp_notif request{};
      if (ioctl(listener, SECCOMP_IOCTL_NOTIF_RECV, &request) != 0) {
        continue;
      }
      const TrappedCall call(listener, request, threads);
      const pid_t process = threads.process(call.thread());
      if (PreloadedProcesses::is_announcement(request.data)) {
        const std::uint64_t before = preloaded.announced();
        preloaded.take_announcement(call, process);
        verdicts += preloaded.announced() > before ? 'a' : 'n';
      } else {
        verdicts += preloaded.core_tunes(call, process) ? 'c' : 's';
        call.continue_call();
      }
    }
    close(listener);
  }
  close(channel[0]);
  EXPECT_EQ(waitpid(child, &child_status, 0), child);
  return verdicts;
}

TEST(PreloadedProcesses, LeavesAnAnnouncedProcessToItsCoreWhileTheMarkerStays) {
  PreloadedProcesses preloaded;
  int status = 0;
  const std::string verdicts = verdicts_for_child(preloaded, status);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the child's step " << WEXITSTATUS(status);
  // A marker naming another address is refused; the process's call is the supervisor's until a
  // right one is taken, then its core's; its forked child's is the supervisor's; once the marker
  // is gone the process is forgotten, also when the marker comes back, until it announces again.
  EXPECT_EQ(verdicts, "nsacsssac");
  EXPECT_EQ(preloaded.announced(), 2U);
}

TEST(PreloadedProcesses, TellsAnnouncementsByTheirRegistersAlone) {
  seccomp_data data{};
  data.nr = SYS_connect;
  data.args[0] = static_cast<std::uint64_t>(static_cast<std::int64_t>(config::kAnnouncementFd));
  data.args[2] = sizeof(config::CoreMarker);
  EXPECT_TRUE(PreloadedProcesses::is_announcement(data));
  data.args[2] = sizeof(config::CoreMarker) + 1;
  EXPECT_FALSE(PreloadedProcesses::is_announcement(data));
  data.args[2] = sizeof(config::CoreMarker);
  data.args[0] = static_cast<std::uint64_t>(-1);
  EXPECT_FALSE(PreloadedProcesses::is_announcement(data));
  data.args[0] = static_cast<std::uint64_t>(static_cast<std::int64_t>(config::kAnnouncementFd));
  data.nr = SYS_listen;
  EXPECT_FALSE(PreloadedProcesses::is_announcement(data));
}

}  // namespace
}  // namespace tcptune::supervisor
