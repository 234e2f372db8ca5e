#include "supervision.hpp"

#include <linux/capability.h>
#include <linux/seccomp.h>
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

// Reaps every exited child (the program and orphans reparented here); true once `child` is.
bool reap(pid_t child, int& child_status) noexcept {
  bool child_exited = false;
  for (;;) {
    int status = 0;
    const pid_t pid = waitpid(-1, &status, WNOHANG);
    if (pid <= 0) {
      return child_exited;
    }
    if (pid == child) {
      child_status = status;
      child_exited = true;
    }
  }
}

// How often exits are looked for when no call comes (and at most, when calls come).
constexpr int kReapEveryMs = 100;

bool has_children() noexcept {
  return waitid(P_ALL, 0, nullptr, WEXITED | WNOHANG | WNOWAIT) == 0 || errno != ECHILD;
}

// The records thread: each answered call's records, the watch of the connections, the
// textfile, the log flushed; until the answering thread closes `follow_ups`.
void keep_records(const Supervised& supervised, const config::Policy& policy, SupervisorLog& log,
                  FollowUpQueue& follow_ups, std::int64_t connection_poll_ns, const SocketAccess& access) noexcept {
  try {
    ConnectionWatch watch(policy, log, connection_poll_ns);
    CallRecords records(policy, log, &watch, access);
    MetricsTextfile textfile(policy, log, supervised.program, supervised.child, supervised.arm);
    while (std::optional<std::vector<FollowUp>> taken = follow_ups.take(std::chrono::milliseconds(kReapEveryMs))) {
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
    // Out of memory: the records stop; the calls are still answered.
    follow_ups.abandon();
  }
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
  if (syscall(SYS_seccomp, SECCOMP_GET_NOTIF_SIZES, 0, &sizes) == 0) {
    (void)ioctl(listener, kernel::kNotifSetFlags, kernel::kSyncWakeUp);  // 6.6+; without, slower
  }
  // The kernel's seccomp_notif may be larger than this header's: receive into its size.
  std::vector<unsigned char> buffer(std::max<std::size_t>(sizes.seccomp_notif, sizeof(seccomp_notif)));
  // The supervisor keeps a pidfd and a /proc descriptor per thread of the program: as many
  // descriptors as the hard limit allows (the program, forked already, keeps its own limit).
  if (rlimit files{}; getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur < files.rlim_max) {
    files.rlim_cur = files.rlim_max;
    (void)setrlimit(RLIMIT_NOFILE, &files);
  }
  FollowUpQueue follow_ups;
  CallTuner tuner(policy, follow_ups, log.enabled(config::LogLevel::info), access);
  std::thread records_thread([&supervised, &policy, &log, &follow_ups, connection_poll_ns, &access] {
    keep_records(supervised, policy, log, follow_ups, connection_poll_ns, access);
  });
  ServeResult result;
  bool child_exited = false;
  bool listening = true;
  std::int64_t next_reap_ns = 0;
  while (true) {
    // Exits are noticed by polling, at most every kReapEveryMs and whenever no call comes for
    // that long: the wait is bounded, orphans are reaped within it, and a busy program's calls
    // do not each pay a wait4.
    if (const std::int64_t now = shim::monotonic_ns(); now >= next_reap_ns || !listening) {
      next_reap_ns = now + std::int64_t{kReapEveryMs} * 1'000'000;
      child_exited = reap(child, result.child_status) || child_exited;
      if (child_exited && (!listening || !has_children())) {
        break;
      }
    }
    // Sockets held for the program are looked at more often: one it closed keeps its port.
    tuner.tick(shim::monotonic_ns());
    const int wait_ms = tuner.holds_sockets() ? static_cast<int>(HeldSockets::kSweepEvery.count()) : kReapEveryMs;
    pollfd ready{listening ? listener : -1, POLLIN, 0};
    if (const int ready_count = poll(&ready, 1, wait_ms); ready_count <= 0) {
      next_reap_ns = ready_count == 0 ? 0 : next_reap_ns;  // a quiet spell: reap now
      continue;                                            // or a signal: look again
    }
    if ((ready.revents & POLLIN) != 0) {
      std::memset(buffer.data(), 0, buffer.size());
      if (ioctl(listener, SECCOMP_IOCTL_NOTIF_RECV, buffer.data()) == 0) {
        seccomp_notif request{};
        std::memcpy(&request, buffer.data(), sizeof request);
        tuner.handle(listener, request);
      }
      continue;  // ENOENT: withdrawn (a signal, or the thread died); EINTR: look again
    }
    if ((ready.revents & (POLLHUP | POLLERR | POLLNVAL)) != 0) {
      listening = false;  // no supervised task is left
    }
  }
  close(listener);
  follow_ups.close();
  records_thread.join();
  result.calls = tuner.calls();
  result.tuned = tuner.tuned();
  result.records_dropped = follow_ups.dropped();
  result.processes_left_to_shim = tuner.processes_left_to_shim();
  return result;
}

}  // namespace tcptune::supervisor
