#include "supervision.hpp"

#include <linux/capability.h>
#include <linux/seccomp.h>
#include <malloc.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <optional>
#include <system_error>
#include <thread>

#include "call_records.hpp"
#include "call_tuner.hpp"
#include "connection_watch.hpp"
#include "fd_passing.hpp"
#include "follow_up_queue.hpp"
#include "kernel_abi.hpp"
#include "metrics_textfile.hpp"
#include "monotonic_clock.hpp"

namespace tcptune::supervisor {

namespace {

int install_filter(const std::vector<sock_filter>& filter, unsigned long flags) noexcept {
  sock_fprog program{static_cast<unsigned short>(filter.size()), const_cast<sock_filter*>(filter.data())};
  return static_cast<int>(syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, flags, &program));
}

// Reaps every exited child (the program and orphans reparented here), from either thread: the
// answering one between calls, the records thread while the answering one waits in the kernel's
// receive. The program's status is kept once it is reaped.
class Reaper {
 public:
  explicit Reaper(pid_t child) noexcept : child_(child) {}
  // True once the program has been reaped (by this call or an earlier one, on either thread).
  bool reap() noexcept {
    for (;;) {
      int status = 0;
      const pid_t pid = waitpid(-1, &status, WNOHANG);
      if (pid <= 0) {
        break;
      }
      if (pid == child_) {
        status_ = status;
        exited_.store(true, std::memory_order_release);
      }
    }
    return exited_.load(std::memory_order_acquire);
  }
  // The program's wait status, once reap() has returned true.
  [[nodiscard]] int status() const noexcept { return status_; }

 private:
  pid_t child_;
  int status_ = 0;
  std::atomic<bool> exited_{false};
};

// Freed heap kept from one batch of follow-ups to the next, rather than returned to the kernel.
constexpr int kKeptFreeHeap = 32 << 20;

// How often exits are looked for when no call comes (and at most, when calls come).
constexpr int kReapEveryMs = 100;

bool has_children() noexcept {
  return waitid(P_ALL, 0, nullptr, WEXITED | WNOHANG | WNOWAIT) == 0 || errno != ECHILD;
}

// The records thread: each answered call's records, the watch of the connections, the
// textfile, the log flushed, exits reaped; until the answering thread closes `follow_ups`.
void keep_records(const Supervised& supervised, const config::Policy& policy, SupervisorLog& log,
                  FollowUpQueue& follow_ups, std::int64_t connection_poll_ns, const SocketAccess& access,
                  Reaper& reaper) noexcept {
  try {
    ConnectionWatch watch(policy, log, connection_poll_ns);
    CallRecords records(policy, log, &watch, access);
    MetricsTextfile textfile(policy, log, supervised.program, supervised.child, supervised.arm);
    const auto wait = [&watch] {
      const auto dump_due =
          std::chrono::ceil<std::chrono::milliseconds>(std::chrono::nanoseconds(watch.next_dump_in_ns()));
      return std::clamp(dump_due, std::chrono::milliseconds(1), std::chrono::milliseconds(kReapEveryMs));
    };
    while (std::optional<std::vector<FollowUp>> taken = follow_ups.take(wait())) {
      (void)reaper.reap();
      for (FollowUp& done : *taken) {
        records.record(done);
      }
      watch.tick();
      textfile.tick(watch, records, follow_ups.dropped());
      log.flush();
    }
    watch.finish();
    textfile.write_last(watch, records, follow_ups.dropped());
    log.flush();
  } catch (...) {
    // Out of memory: the records stop; the calls are still answered (and exits are looked for
    // by the answering thread, which then polls: see serve).
    follow_ups.abandon();
  }
}

// Whether the listener has hung up: no supervised task is left.
bool hung_up(int listener) noexcept {
  pollfd ready{listener, POLLIN, 0};
  return poll(&ready, 1, 0) > 0 && (ready.revents & (POLLHUP | POLLERR | POLLNVAL)) != 0;
}

}  // namespace

void prepare_to_supervise() noexcept {
  (void)prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
}

bool filter_needs_no_new_privs() noexcept {
  if (prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) == 1) {
    return false;
  }
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  std::array<__user_cap_data_struct, _LINUX_CAPABILITY_U32S_3> sets{};
  if (syscall(SYS_capget, &header, sets.data()) != 0) {
    return true;
  }
  constexpr unsigned kBits = 32;
  return (sets[CAP_SYS_ADMIN / kBits].effective & (1U << (CAP_SYS_ADMIN % kBits))) == 0;
}

int install_in_child(int channel, const std::vector<sock_filter>& filter, bool no_new_privs) noexcept {
  int error = 0;
  if (no_new_privs && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
    error = errno;
  }
  int listener = -1;
  if (error == 0) {
    listener = install_filter(filter, SECCOMP_FILTER_FLAG_NEW_LISTENER | kernel::kWaitKillableRecv);
    if (listener < 0 && errno == EINVAL) {
      listener = install_filter(filter, SECCOMP_FILTER_FLAG_NEW_LISTENER);
    }
    if (listener < 0) {
      error = errno;
    }
  }
  const int sent = send_status(channel, error, listener);
  if (listener >= 0) {
    close(listener);
  }
  if (error == 0) {
    error = sent;
  }
  close(channel);
  return error;
}

int receive_listener(int channel, std::string& problem) {
  int error = 0;
  int listener = -1;
  if (!receive_status(channel, error, listener)) {
    problem = "the program ended before supervision started";
  } else if (listener < 0) {
    // EBUSY: a filter with a listener was already inherited from above, before the program ran.
    problem = error == EBUSY ? "a seccomp listener is already in place (this tcptune runs under another supervisor, "
                               "such as an outer tcptune run --supervise)"
                             : "seccomp: " + std::generic_category().message(error);
  }
  return listener;
}

ServeResult serve(int listener, const Supervised& supervised, const config::Policy& policy, SupervisorLog& log,
                  std::int64_t connection_poll_ns, const SocketAccess& access) {
  const pid_t child = supervised.child;
  seccomp_notif_sizes sizes{};
  // Synchronous wake-up (6.6+): the kernel wakes this thread on the trapping CPU, and the
  // program's on this one at the answer, about half the round trip. The same kernels wake a
  // receive that waits in the kernel once no supervised task is left (ENOENT, the listener hung
  // up), so the answering thread can wait in the receive itself, one system call per call fewer
  // than a poll and then the receive. Without it (older kernels): poll, then receive.
  bool sync_wake_up = false;
  if (syscall(SYS_seccomp, SECCOMP_GET_NOTIF_SIZES, 0, &sizes) == 0) {
    sync_wake_up = ioctl(listener, kernel::kNotifSetFlags, kernel::kSyncWakeUp) == 0;
  }
  // The kernel's seccomp_notif may be larger than this header's: receive into its size.
  std::vector<unsigned char> buffer(std::max<std::size_t>(sizes.seccomp_notif, sizeof(seccomp_notif)));
  // The supervisor keeps a pidfd and a /proc descriptor per thread of the program: as many
  // descriptors as the hard limit allows (the program, forked already, keeps its own limit).
  if (rlimit files{}; getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur < files.rlim_max) {
    files.rlim_cur = files.rlim_max;
    (void)setrlimit(RLIMIT_NOFILE, &files);
  }
  // Each call's follow-up is allocated here and freed on the records thread a batch later: with
  // glibc's default trim threshold the heap's top went back to the kernel and was faulted in
  // again, a page fault every few calls. Kept instead (the queue holds at most kMostWaiting).
  // Set before the records thread starts.
  (void)mallopt(M_TRIM_THRESHOLD, kKeptFreeHeap);  // NOLINT(concurrency-mt-unsafe)
  FollowUpQueue follow_ups;
  Reaper reaper(child);
  CallTuner tuner(policy, follow_ups, log.enabled(config::LogLevel::info), access);
  std::thread records_thread([&supervised, &policy, &log, &follow_ups, connection_poll_ns, &access, &reaper] {
    keep_records(supervised, policy, log, follow_ups, connection_poll_ns, access, reaper);
  });
  const auto receive_and_handle = [&buffer, &tuner, listener] {
    std::memset(buffer.data(), 0, buffer.size());
    if (ioctl(listener, SECCOMP_IOCTL_NOTIF_RECV, buffer.data()) != 0) {
      return false;  // ENOENT: withdrawn (a signal, the thread died) or none left; EINTR: a signal
    }
    seccomp_notif request{};
    std::memcpy(&request, buffer.data(), sizeof request);
    tuner.handle(listener, request);
    return true;
  };
  ServeResult result;
  bool child_exited = false;
  bool listening = true;
  std::int64_t next_reap_ns = 0;
  while (true) {
    // Exits are noticed by polling, at most every kReapEveryMs and whenever no call comes for
    // that long: the wait is bounded, orphans are reaped within it, and a busy program's calls
    // do not each pay a wait4. While this thread waits in the receive, the records thread reaps.
    if (const std::int64_t now = shim::monotonic_ns(); now >= next_reap_ns || !listening) {
      next_reap_ns = now + std::int64_t{kReapEveryMs} * 1'000'000;
      child_exited = reaper.reap() || child_exited;
      if (child_exited && (!listening || !has_children())) {
        break;
      }
    }
    // Sockets held for the program are looked at more often: one it closed keeps its port.
    tuner.tick(shim::monotonic_ns());
    if (listening && sync_wake_up && !tuner.holds_sockets() && !follow_ups.abandoned()) {
      if (!receive_and_handle() && errno == ENOENT && hung_up(listener)) {
        listening = false;  // no supervised task is left
      }
      continue;
    }
    const int wait_ms = tuner.holds_sockets() ? static_cast<int>(HeldSockets::kSweepEvery.count()) : kReapEveryMs;
    pollfd ready{listening ? listener : -1, POLLIN, 0};
    if (const int ready_count = poll(&ready, 1, wait_ms); ready_count <= 0) {
      next_reap_ns = ready_count == 0 ? 0 : next_reap_ns;  // a quiet spell: reap now
      continue;                                            // or a signal: look again
    }
    if ((ready.revents & POLLIN) != 0) {
      (void)receive_and_handle();
      continue;
    }
    if ((ready.revents & (POLLHUP | POLLERR | POLLNVAL)) != 0) {
      listening = false;  // no supervised task is left
    }
  }
  close(listener);
  follow_ups.close();
  records_thread.join();
  result.child_status = reaper.status();
  result.calls = tuner.calls();
  result.tuned = tuner.tuned();
  result.records_dropped = follow_ups.dropped();
  result.processes_left_to_shim = tuner.processes_left_to_shim();
  return result;
}

}  // namespace tcptune::supervisor
