#include "supervised_run.hpp"

#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <system_error>

#include "call_tuner.hpp"
#include "program_launch.hpp"
#include "seccomp_filter.hpp"
#include "socket_access.hpp"
#include "supervision.hpp"
#include "supervisor_log.hpp"
#include "tcptune/config/arm_label.hpp"
#include "tcptune/config/core_announcement.hpp"
#include "tcptune/config/escape.hpp"
#include "tcptune/config/log_destination.hpp"
#include "tcptune/config/policy_loader.hpp"

namespace tcptune::cli {

namespace {

// How often the supervised connections are looked up (sock_diag): a conn_close record's
// TCP_INFO is at most this old.
constexpr std::int64_t kConnectionPollNs = 200'000'000;

}  // namespace

int run_supervised(const std::string& resolved, std::vector<char*>& argv, const config::LoadResult& loaded) {
  const std::string program = std::filesystem::path(argv[0]).filename().string();
  if (!loaded.ok()) {
    (void)std::fprintf(stderr, "tcptune: %s; running untuned\n", loaded.error().to_string().c_str());
    return run_child(resolved, argv);
  }
  const config::Policy& policy = loaded.policy();
  const config::LogDestination destination = config::resolve_log_destination(&policy, true);
  for (const std::string& problem : destination.problems) {
    (void)std::fprintf(stderr, "tcptune: %s\n", problem.c_str());
  }
  const config::ArmFromEnvironment arm = config::arm_from_environment(std::getenv(config::kArmEnv));
  if (!arm.problem.empty()) {
    (void)std::fprintf(stderr, "tcptune: %s\n", arm.problem.c_str());
  }
  // Without CAP_SYS_ADMIN the kernel takes a filter only under no_new_privs, which strips every
  // setuid program the supervised one runs: said here, and for each such program it runs (the
  // filter then traps exec too).
  const bool no_new_privs = supervisor::filter_needs_no_new_privs();
  // Where pidfd_getfd is refused (a container's default seccomp profile), tcptune creates the
  // program's TCP sockets itself and hands them over; the filter then traps TCP socket().
  const supervisor::SocketAccess access = supervisor::probe_socket_access();
  supervisor::FilterSpec spec = supervisor::CallTuner::filter_spec(policy, access);
  spec.exec = no_new_privs;
  const std::vector<sock_filter> filter = supervisor::build_filter(spec);
  int channel[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, channel) != 0) {
    (void)std::fprintf(stderr, "tcptune: cannot supervise %s: socketpair: %s; running untuned\n", program.c_str(),
                       std::generic_category().message(errno).c_str());
    return run_child(resolved, argv);
  }
  if (no_new_privs) {
    (void)std::fprintf(stderr,
                       "tcptune: no_new_privs is set (tcptune lacks CAP_SYS_ADMIN): setuid/setgid bits and file "
                       "capabilities give no privileges to %s and what it runs (each such program run is named)\n",
                       config::escape_for_display(program, false).c_str());
  }
  if (access.hand_over) {
    (void)std::fprintf(stderr,
                       "tcptune: %s: tcptune creates the TCP sockets of %s itself and hands them over "
                       "(SECCOMP_ADDFD_FLAG_SEND, Linux 5.14)\n",
                       supervisor::describe_refusal(access).c_str(),
                       config::escape_for_display(program, false).c_str());
  }
  supervisor::prepare_to_supervise();
  // A glibc program the supervised one starts keeps an inherited shim in LD_PRELOAD; its core,
  // once active, announces itself, and the supervisor leaves that process to it
  // (tcptune/config/core_announcement.hpp).
  (void)setenv(config::kSupervisedEnv, "1", 1);
  ChildHooks hooks;
  hooks.before_exec = [&] {
    close(channel[0]);
    (void)supervisor::install_in_child(channel[1], filter, no_new_privs);
  };
  hooks.wait = [&](pid_t child) {
    close(channel[1]);
    // The supervisor must outlive the program: a call trapped after it is gone fails (ENOSYS).
    (void)std::signal(SIGPIPE, SIG_IGN);
    (void)std::signal(SIGXFSZ, SIG_IGN);  // a log past `ulimit -f`: the write fails (EFBIG) instead
    std::string problem;
    const int listener = supervisor::receive_listener(channel[0], problem);
    close(channel[0]);
    if (listener < 0) {
      (void)std::fprintf(stderr, "tcptune: cannot supervise %s: %s; it runs untuned by this tcptune\n", program.c_str(),
                         problem.c_str());
      return wait_for_exit(child);
    }
    supervisor::SupervisorLog log;
    if (const std::string error = log.open(config::expand_log_path(destination.pattern, program, child),
                                           destination.level, destination.format, arm.arm);
        !error.empty()) {
      (void)std::fprintf(stderr, "tcptune: %s; logging disabled\n", error.c_str());
    }
    telemetry::Record start("start");
    start.add("policy", policy.source)
        .add("rules", static_cast<std::int64_t>(policy.rules.size()))
        .add("mode", "supervised")
        .add("no_new_privs", no_new_privs)
        .add("sockets", access.hand_over ? "handed_over" : "pidfd_getfd");
    if (!arm.arm.empty() && destination.format != config::LogFormat::jsonl) {
      start.add("arm", arm.arm);  // in jsonl every line has it
    }
    log.write(config::LogLevel::info, child, program, start);
    const supervisor::ServeResult served =
        supervisor::serve(listener, {child, program, arm.arm}, policy, log, kConnectionPollNs, access);
    telemetry::Record summary("supervisor_summary");
    summary.add("trapped_calls", served.calls).add("sockets_tuned", served.tuned);
    if (served.records_dropped != 0) {
      summary.add("records_dropped", served.records_dropped);
    }
    if (served.processes_left_to_shim != 0) {
      summary.add("processes_left_to_shim", served.processes_left_to_shim);
    }
    log.flush();  // what stderr could not take is known once the rest is written
    if (log.on_stderr()) {
      summary.add("log_records_dropped", log.drops().total());
    }
    log.write(config::LogLevel::info, child, program, summary);
    log.flush();
    return served.child_status;
  };
  return run_child(resolved, argv, hooks);
}

}  // namespace tcptune::cli
