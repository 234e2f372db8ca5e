#include "commands.hpp"

#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <ctime>

#include "daemon.hpp"
#include "link_json.hpp"
#include "netns_setup.hpp"
#include "netns_sysctl.hpp"
#include "runtime_state.hpp"
#include "subprocess.hpp"

namespace tcptune::linkem {

namespace {

constexpr std::string_view kBothNamespaces[] = {kNamespaceA, kNamespaceB};
constexpr int kStopGraceMs = 3000;

int usage_error(const std::string& message) {
  (void)std::fprintf(stderr, "tcptune-linkem: %s (see tcptune-linkem --help)\n", message.c_str());
  return kExitUsage;
}

int failure(const std::string& message) {
  (void)std::fprintf(stderr, "tcptune-linkem: %s\n", message.c_str());
  return kExitFailure;
}

// 0 when linkem can work here, else kExitUnsupported after saying why.
int check_environment() {
  if (geteuid() != 0) {
    (void)std::fprintf(stderr, "tcptune-linkem: needs root (network namespaces and TUN devices)\n");
    return kExitUnsupported;
  }
  if (access("/dev/net/tun", R_OK | W_OK) != 0) {
    (void)std::fprintf(stderr, "tcptune-linkem: /dev/net/tun is missing or not usable (%s)\n", std::strerror(errno));
    return kExitUnsupported;
  }
  return 0;
}

// Stops a daemon if one runs and removes whatever a previous run left: namespaces (a SIGKILLed daemon
// cannot delete them), pidfile, control socket. Quiet and successful when nothing exists.
bool tear_down(std::string& error) {
  if (const std::optional<pid_t> pid = running_daemon()) {
    if (!stop_daemon(*pid, kStopGraceMs, error)) {
      return false;
    }
  }
  for (const std::string_view netns : kBothNamespaces) {
    if (!netns_delete(netns, error)) {
      return false;
    }
  }
  (void)unlink(runtime_file("pid").c_str());
  (void)unlink(runtime_file("control.sock").c_str());
  return true;
}

// `tc qdisc add ... netem` on a veth pair inside the (fresh) namespace A: the only reliable test,
// since netem may be built in or a module.
bool netem_available(std::string& reason) {
  const std::string netns(kNamespaceA);
  const std::vector<std::string> add_veth = {"ip",   "-n",   netns,  "link", "add",     "lkprobe0",
                                             "type", "veth", "peer", "name", "lkprobe1"};
  CommandResult result = run_command(add_veth);
  if (!result.ok()) {
    reason = command_line(add_veth) + ": " + result.output;
    return false;
  }
  const std::vector<std::string> add_netem = {"tc",       "-n",   netns,   "qdisc", "add", "dev",
                                              "lkprobe0", "root", "netem", "delay", "1ms"};
  result = run_command(add_netem);
  run_command({"ip", "-n", netns, "link", "del", "lkprobe0"});
  if (!result.ok()) {
    reason = command_line(add_netem) + ": " + result.output;
    return false;
  }
  return true;
}

// The JSON of the running link, or an error saying why there is none.
bool running_status(std::string& json, std::string& error) {
  if (!running_daemon()) {
    error = "not running";
    if (netns_exists(kNamespaceA) || netns_exists(kNamespaceB)) {
      error += " (namespaces of a dead daemon remain: tcptune-linkem down removes them)";
    }
    return false;
  }
  return query_daemon(json, error);
}

std::uint64_t fresh_seed() {
  timespec now{};
  clock_gettime(CLOCK_REALTIME, &now);
  return static_cast<std::uint64_t>(now.tv_nsec) ^ (static_cast<std::uint64_t>(now.tv_sec) << 20) ^
         static_cast<std::uint64_t>(getpid());
}

// Everything `up` does after parsing. Prints the link's JSON line to 'out'.
bool bring_up_link(LinkConfig config, std::FILE* out, pid_t& daemon_pid, std::string& error) {
  if (!config.seed_given) {
    config.seed = fresh_seed();
  }
  RuntimeLock lock;
  if (!lock.acquire(error) || !tear_down(error)) {
    return false;
  }
  auto undo = [&](const std::string& message) {
    std::string ignored;
    tear_down(ignored);
    error = message;
    return false;
  };
  for (const std::string_view netns : kBothNamespaces) {
    if (!netns_add(netns, error)) {
      return undo(error);
    }
  }
  if (config.backend == Backend::kNetem) {
    std::string reason;
    if (!netem_available(reason)) {
      return undo("--backend netem: netem is not available on this host (" + reason + "); use --backend tun");
    }
    return undo("--backend netem: netem works here, but this build implements only the tun backend");
  }
  const SysctlChange sysctls{config.sysctls.congestion, config.sysctls.slow_start_after_idle};
  if (!apply_netns_sysctls(kBothNamespaces, sysctls, error)) {
    return undo(error);
  }
  if (!start_daemon(config, daemon_pid, error)) {
    return undo(error);
  }
  LinkDescription link{"tun", &config, {}, daemon_pid, nullptr, nullptr};
  if (!read_netns_sysctls(kNamespaceA, link.sysctls, error)) {
    return undo(error);
  }
  (void)std::fprintf(out, "%s\n", format_link_json(link).c_str());
  (void)std::fflush(out);
  return true;
}

// 128 + signal for a command killed by one, like a shell.
int exit_status_of(int wait_status) {
  if (WIFEXITED(wait_status)) {
    return WEXITSTATUS(wait_status);
  }
  return WIFSIGNALED(wait_status) ? 128 + WTERMSIG(wait_status) : kExitFailure;
}

}  // namespace

int command_up(std::span<const std::string_view> args) {
  LinkConfig config;
  std::string error;
  if (!parse_link_options(args, config, error)) {
    return usage_error(error);
  }
  if (const int unsupported = check_environment()) {
    return unsupported;
  }
  pid_t daemon_pid = 0;
  return bring_up_link(config, stdout, daemon_pid, error) ? 0 : failure(error);
}

int command_down(std::span<const std::string_view> args) {
  if (!args.empty()) {
    return usage_error("down takes no arguments");
  }
  if (const int unsupported = check_environment()) {
    return unsupported;
  }
  std::string error;
  RuntimeLock lock;
  if (!lock.acquire(error) || !tear_down(error)) {
    return failure(error);
  }
  return 0;
}

int command_status(std::span<const std::string_view> args) {
  if (!args.empty()) {
    return usage_error("status takes no arguments");
  }
  if (const int unsupported = check_environment()) {
    return unsupported;
  }
  std::string json;
  std::string error;
  if (!running_status(json, error)) {
    return failure(error);
  }
  (void)std::printf("%s\n", json.c_str());
  return 0;
}

int command_set(std::span<const std::string_view> args) {
  SysctlChange change;
  std::string error;
  if (!parse_set_options(args, change, error)) {
    return usage_error(error);
  }
  if (const int unsupported = check_environment()) {
    return unsupported;
  }
  RuntimeLock lock;
  if (!lock.acquire(error)) {
    return failure(error);
  }
  if (!running_daemon()) {
    return failure("not running");
  }
  if (!apply_netns_sysctls(kBothNamespaces, change, error)) {
    return failure(error);
  }
  std::string json;
  if (!running_status(json, error)) {
    return failure(error);
  }
  (void)std::printf("%s\n", json.c_str());
  return 0;
}

int command_run(std::span<const std::string_view> args, char** command_argv) {
  LinkConfig config;
  std::string error;
  if (command_argv == nullptr || command_argv[0] == nullptr) {
    return usage_error("run needs -- COMMAND [ARGS...]");
  }
  if (!parse_link_options(args, config, error)) {
    return usage_error(error);
  }
  if (const int unsupported = check_environment()) {
    return unsupported;
  }
  // Termination signals are taken synchronously from here on, so that none can skip the teardown; the
  // command gets the default dispositions back. As a subreaper we also reap the daemon after `down`.
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  sigset_t handled;
  sigemptyset(&handled);
  for (const int signo : {SIGINT, SIGTERM, SIGHUP, SIGCHLD}) {
    sigaddset(&handled, signo);
  }
  sigset_t original;
  (void)sigprocmask(SIG_BLOCK, &handled, &original);

  pid_t daemon_pid = 0;
  if (!bring_up_link(config, stderr, daemon_pid, error)) {
    return failure(error);
  }
  int status = kExitFailure;
  int stopped_by = 0;
  const timespec no_wait{0, 0};
  siginfo_t info{};
  if (sigtimedwait(&handled, &info, &no_wait) > 0 && info.si_signo != SIGCHLD) {
    stopped_by = info.si_signo;  // arrived while the link came up: do not start the command at all
    status = 128 + stopped_by;
  }
  pid_t child = -1;
  if (stopped_by == 0) {
    child = fork();
    if (child == 0) {
      (void)sigprocmask(SIG_SETMASK, &original, nullptr);
      execvp(command_argv[0], command_argv);
      (void)std::fprintf(stderr, "tcptune-linkem: %s: %s\n", command_argv[0], std::strerror(errno));
      _exit(127);
    }
    if (child < 0) {
      error = std::string("fork: ") + std::strerror(errno);
    }
  }
  // Wait for the command; forward a termination signal sent to us by a process (one from the terminal
  // reached the command's process group already), and kill the command if it outlives 10 s after that.
  bool forwarded = false;
  while (child > 0) {
    const timespec grace{10, 0};
    const int signo = forwarded ? sigtimedwait(&handled, &info, &grace) : sigwaitinfo(&handled, &info);
    if (signo < 0) {
      if (errno == EAGAIN) {
        (void)kill(child, SIGKILL);
      }
      continue;
    }
    if (signo == SIGCHLD) {
      int wait_status = 0;
      pid_t reaped;
      while ((reaped = waitpid(-1, &wait_status, WNOHANG)) > 0) {
        if (reaped == child) {
          status = exit_status_of(wait_status);
          child = -1;
        }
      }
      continue;
    }
    if (info.si_code == SI_USER || info.si_code == SI_QUEUE || info.si_code == SI_TKILL) {
      (void)kill(child, signo);
    }
    forwarded = true;
  }
  std::string down_error;
  {
    RuntimeLock lock;
    if (!lock.acquire(down_error) || !tear_down(down_error)) {
      (void)std::fprintf(stderr, "tcptune-linkem: down: %s\n", down_error.c_str());
    }
  }
  // The daemon was reparented to us: collect it, now that it has exited.
  for (int i = 0; i < 100 && waitpid(daemon_pid, nullptr, WNOHANG) == 0; ++i) {
    usleep(10000);
  }
  if (!error.empty()) {
    return failure(error);
  }
  return status;
}

}  // namespace tcptune::linkem
