#include "daemon.hpp"

#include <fcntl.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>

#include "link_json.hpp"
#include "netns_setup.hpp"
#include "netns_sysctl.hpp"
#include "packet_mover.hpp"
#include "runtime_state.hpp"
#include "tun_device.hpp"

namespace tcptune::linkem {

namespace {

constexpr std::uint32_t kAddressA = ipv4(198, 18, 0, 1);
constexpr std::uint32_t kAddressB = ipv4(198, 18, 0, 2);
constexpr int kReadyFd = 3;

// The daemon's end of the readiness pipe: "ready PID" or "error MESSAGE", then closed.
void report(const std::string& line) {
  const std::string text = line + "\n";
  (void)!write(kReadyFd, text.data(), text.size());
}

// Creates and addresses the TUN device of one namespace; returns its fd or -1.
int make_tun(std::string_view netns, std::uint32_t local, std::uint32_t peer, std::string& error) {
  ScopedNetns inside;
  if (!inside.enter(netns, error)) {
    return -1;
  }
  // Opened inside: the device is created in the namespace of the opening thread, and stays there.
  const int fd = open_tun(kTunName, error);
  if (fd < 0) {
    return -1;
  }
  if (!configure_point_to_point({kTunName, local, peer, kTunMtu}, error) || !bring_up("lo", error)) {
    error = std::string(netns) + ": " + error;
    close(fd);
    return -1;
  }
  return fd;
}

// Detaches stdio from the caller (whose pipes must not stay open, or `$(tcptune-linkem up)` would hang)
// and keeps only the readiness pipe, as fd 3.
bool redirect_stdio(int ready_fd) {
  if (dup2(ready_fd, kReadyFd) < 0) {
    return false;
  }
  const int null_fd = open("/dev/null", O_RDONLY);
  const std::string log_path = runtime_file("log");
  const int log_fd = open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (null_fd < 0 || log_fd < 0) {
    return false;
  }
  dup2(null_fd, STDIN_FILENO);
  dup2(log_fd, STDOUT_FILENO);
  dup2(log_fd, STDERR_FILENO);
  syscall(SYS_close_range, kReadyFd + 1, ~0U, 0);
  return true;
}

void remove_runtime_files() {
  const std::optional<pid_t> pid_in_file = [] {
    std::string text;
    std::string ignored;
    return read_sysctl(runtime_file("pid"), text, ignored) ? std::optional<pid_t>(std::atoi(text.c_str()))
                                                           : std::nullopt;
  }();
  if (pid_in_file == getpid()) {
    (void)unlink(runtime_file("pid").c_str());
  }
  (void)unlink(runtime_file("control.sock").c_str());
}

// Real-time priority: under load the programs at both ends compete with the mover for 2 cores, and each
// CFS time slice of theirs is that much lateness for packets (measured at 100 Mbit/s: 21% of packets more
// than 500 us late as SCHED_OTHER, even at nice -20; 0.1-0.2% as SCHED_FIFO). The mover sleeps whenever
// nothing is due and rations its spinning, and the kernel keeps 5% of each core for other tasks anyway.
void raise_priority() {
  sched_param param{};
  param.sched_priority = 10;
  if (sched_setscheduler(0, SCHED_FIFO | SCHED_RESET_ON_FORK, &param) == 0) {
    (void)std::fprintf(stderr, "linkem[%d]: scheduling SCHED_FIFO priority %d\n", getpid(), param.sched_priority);
    return;
  }
  (void)std::fprintf(stderr,
                     "linkem[%d]: SCHED_FIFO refused (%s); staying SCHED_OTHER, expect more lateness under load\n",
                     getpid(), std::strerror(errno));
}

void log_counters(const char* name, const DirectionCounters& counters) {
  (void)std::fprintf(stderr, "linkem[%d]: %s %s\n", getpid(), name, format_counters_json(counters).c_str());
}

int daemon_main(const LinkConfig& config) {
  std::string error;
  auto fail = [&](const std::string& message) {
    (void)std::fprintf(stderr, "linkem[%d]: %s\n", getpid(), message.c_str());
    report("error " + message);
    remove_runtime_files();
    return 1;
  };
  prctl(PR_SET_NAME, kDaemonName);
  // Timer slack is what epoll may add to a timeout (the default is 50 us); it is 0 under SCHED_FIFO, and
  // this matters when SCHED_FIFO is refused.
  prctl(PR_SET_TIMERSLACK, 1UL);
  (void)signal(SIGPIPE, SIG_IGN);
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  for (const int signo : {SIGTERM, SIGINT, SIGHUP, SIGQUIT}) {
    sigaddset(&stop_signals, signo);
  }
  (void)sigprocmask(SIG_BLOCK, &stop_signals, nullptr);
  const int signal_fd = signalfd(-1, &stop_signals, SFD_NONBLOCK | SFD_CLOEXEC);
  if (signal_fd < 0) {
    return fail(std::string("signalfd: ") + std::strerror(errno));
  }
  if (!write_pidfile(getpid(), error)) {
    return fail(error);
  }
  const int tun_a = make_tun(kNamespaceA, kAddressA, kAddressB, error);
  if (tun_a < 0) {
    return fail(error);
  }
  const int tun_b = make_tun(kNamespaceB, kAddressB, kAddressA, error);
  if (tun_b < 0) {
    return fail(error);
  }
  raise_priority();
  const int control = listen_control_socket(error);
  if (control < 0) {
    return fail(error);
  }
  auto status_json = [&config](const DirectionCounters& a_to_b, const DirectionCounters& b_to_a) {
    LinkDescription link{"tun", &config, {}, getpid(), &a_to_b, &b_to_a};
    std::string read_error;
    if (!read_netns_sysctls(kNamespaceA, link.sysctls, read_error)) {
      link.sysctls.congestion = "unknown";
    }
    return format_link_json(link);
  };
  PacketMover mover(config, {tun_a, tun_b, control, signal_fd}, status_json);
  if (!mover.init(error)) {
    return fail(error);
  }
  (void)std::fprintf(stderr, "linkem[%d]: ready %s\n", getpid(),
                     format_link_json({"tun", &config, config.sysctls, getpid(), nullptr, nullptr}).c_str());
  report("ready " + std::to_string(getpid()));
  close(kReadyFd);

  const int signo = mover.run();
  (void)std::fprintf(stderr, "linkem[%d]: stopping on signal %d (%s)\n", getpid(), signo, strsignal(signo));
  log_counters("a_to_b", mover.a_to_b());
  log_counters("b_to_a", mover.b_to_a());
  close(tun_a);
  close(tun_b);
  for (const std::string_view netns : {kNamespaceA, kNamespaceB}) {
    if (!netns_delete(netns, error)) {
      (void)std::fprintf(stderr, "linkem[%d]: %s\n", getpid(), error.c_str());
    }
  }
  remove_runtime_files();
  (void)std::fprintf(stderr, "linkem[%d]: stopped\n", getpid());
  return 0;
}

}  // namespace

bool start_daemon(const LinkConfig& config, pid_t& daemon_pid, std::string& error) {
  int ready[2];
  if (pipe2(ready, O_CLOEXEC) != 0) {
    error = std::string("pipe: ") + std::strerror(errno);
    return false;
  }
  (void)std::fflush(nullptr);  // or buffered output would be written twice, once by the daemon
  const pid_t first = fork();
  if (first < 0) {
    error = std::string("fork: ") + std::strerror(errno);
    close(ready[0]);
    close(ready[1]);
    return false;
  }
  if (first == 0) {
    // The first child leads a new session and forks the daemon, which can then never reacquire a
    // controlling terminal; the first child exits at once.
    close(ready[0]);
    setsid();
    const pid_t second = fork();
    if (second != 0) {
      _exit(second < 0 ? 1 : 0);
    }
    umask(022);
    if (chdir("/") != 0 || !redirect_stdio(ready[1])) {
      _exit(1);
    }
    _exit(daemon_main(config));
  }
  close(ready[1]);
  int status = 0;
  while (waitpid(first, &status, 0) < 0 && errno == EINTR) {
  }
  std::string message;
  char buffer[1024];
  for (;;) {
    const ssize_t n = read(ready[0], buffer, sizeof buffer);
    if (n > 0) {
      message.append(buffer, static_cast<std::size_t>(n));
    } else if (n == 0 || errno != EINTR) {
      break;
    }
  }
  close(ready[0]);
  while (!message.empty() && message.back() == '\n') {
    message.pop_back();
  }
  if (message.starts_with("ready ")) {
    daemon_pid = static_cast<pid_t>(std::atoi(message.c_str() + 6));
    return true;
  }
  if (message.starts_with("error ")) {
    error = "daemon: " + message.substr(6);
  } else {
    error = "the daemon exited during startup (see " + runtime_file("log") + ")";
  }
  return false;
}

}  // namespace tcptune::linkem
