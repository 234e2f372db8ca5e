#include "process_runtime.hpp"

#include <pthread.h>
#include <sched.h>
#include <sys/auxv.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <utility>

#include "core_build_id.hpp"
#include "errno_saver.hpp"
#include "idle_restart.hpp"
#include "keep_warm.hpp"
#include "next_symbols.hpp"
#include "shim_log.hpp"
#include "socket_calls.hpp"
#include "supervisor_announcement.hpp"
#include "tcptune/config/arm_label.hpp"
#include "tcptune/config/host_sysctl.hpp"
#include "tcptune/config/log_cut_notice.hpp"
#include "tcptune/config/log_destination.hpp"
#include "tcptune/config/policy_handover.hpp"
#include "tcptune/config/policy_loader.hpp"
#include "tcptune/config/rule_matcher.hpp"
#include "telemetry_worker.hpp"

namespace tcptune::shim {

namespace {

enum class InitState : int { not_started, running, done };
std::atomic<InitState> g_state{InitState::not_started};
thread_local bool t_initializing = false;
// Heap-allocated and never freed: hooks keep running during exit handlers.
Runtime* g_runtime = nullptr;
std::atomic<const Runtime*> g_active{nullptr};

constexpr int kStrictExitStatus = 78;  // EX_CONFIG

const char* env(const char* name, bool secure) {
  return secure ? nullptr : std::getenv(name);
}

// The log path as configured, before expansion: a forked child re-expands {pid}.
std::string* g_log_pattern = nullptr;

void open_configured_log(const config::Policy* policy, const std::string& program, const std::string& arm,
                         bool secure) {
  const config::LogDestination destination = config::resolve_log_destination(policy, !secure);
  for (const std::string& problem : destination.problems) {
    (void)std::fprintf(stderr, "tcptune: %s\n", problem.c_str());
  }
  g_log_pattern = new std::string(destination.pattern);
  const std::string error = open_log(config::expand_log_path(destination.pattern, program, getpid()), destination.level,
                                     destination.format, program, arm);
  if (policy != nullptr && error.empty()) {
    set_log_rotation(policy->log.rotate_size, policy->log.keep);
  }
  if (const char* notice = env(config::kLogCutNoticeEnv, secure); notice != nullptr) {
    set_log_cut_notice(notice);
  }
  if (!error.empty()) {
    say_on_stderr("tcptune: " + error + "; logging disabled\n");
  }
}

// The process whose state the shim holds: set at start-up and in each forked child.
std::atomic<pid_t> g_owner_pid{0};

void after_fork_in_parent() noexcept {
  log_after_fork();
  keep_warm_after_fork_in_parent();
}

// In a forked child: its own log file when the path names {pid}, as a prefork server's
// operator expects one file per process.
void after_fork_in_child() noexcept {
  g_owner_pid.store(getpid(), std::memory_order_relaxed);
  announce_to_supervisor_after_fork();  // before fork() returns: the child's first call is known
  detach_stderr_in_child();             // still under the log's mutex, taken before the fork
  log_after_fork_in_child();
  log_after_fork();
  telemetry_after_fork_in_child();
  keep_warm_after_fork_in_child();
  if (g_log_pattern == nullptr || g_log_pattern->find("{pid}") == std::string::npos || g_runtime == nullptr) {
    return;
  }
  try {
    const long parent = getppid();
    const std::string error = switch_log_file(config::expand_log_path(*g_log_pattern, g_runtime->program, getpid()));
    if (error.empty()) {
      telemetry::Record start("start");
      start.add("forked_from", static_cast<std::int64_t>(parent));
      log_record(config::LogLevel::info, start);
    }
  } catch (...) {
    // Out of memory in a fresh child: keep logging to the parent's file.
  }
}

// The tuning core's socket calls, once the next definitions are known (until then they are plain
// system calls, which is as safe).
constexpr SocketCalls kNextSocketCalls{
    [](int fd, int level, int name, const void* value, socklen_t length) noexcept {
      return next::setsockopt(fd, level, name, value, length);
    },
    [](int fd, int level, int name, void* value, socklen_t* length) noexcept {
      return next::getsockopt(fd, level, name, value, length);
    },
};

// The policy, from an earlier process's snapshot when there is one for exactly this text. Not
// in secure execution (a setuid program): it reads no environment, and writes nothing either.
config::HandedOverPolicy load_policy(const config::PolicySource& source, bool secure) {
  if (secure) {
    const bool builtin = source.kind == config::PolicySource::Kind::builtin;
    return config::HandedOverPolicy{
        config::load_discovered(source),
        builtin ? config::HandedOverPolicy::From::builtin : config::HandedOverPolicy::From::text,
        {},
        "no snapshots in secure execution",
        {}};
  }
  config::SnapshotStorePlace place;
  place.setting = env("TCPTUNE_POLICY_CACHE", secure);
  place.runtime_dir = env("XDG_RUNTIME_DIR", secure);
  place.tmp_dir = env("TMPDIR", secure);
  place.euid = geteuid();
  return config::load_handed_over(source, core_build_id(), place);
}

void initialize() {
  resolve_all_next_symbols();
  install_socket_calls(kNextSocketCalls);
  auto* runtime = new Runtime;
  runtime->program = program_invocation_short_name != nullptr ? program_invocation_short_name : "";
  const bool secure = getauxval(AT_SECURE) != 0;

  const char* strict = env("TCPTUNE_STRICT", secure);
  if (strict != nullptr && std::strcmp(strict, "1") != 0 && std::strcmp(strict, "0") != 0 && *strict != '\0') {
    (void)std::fprintf(stderr, "tcptune: TCPTUNE_STRICT='%s' is not one of 1, 0; ignored\n", strict);
  }
  const config::PolicySource source = config::discover_policy_source(secure);
  config::HandedOverPolicy handed = load_policy(source, secure);
  config::LoadResult& loaded = handed.loaded;
  if (!handed.complaint.empty()) {
    (void)std::fprintf(stderr, "tcptune: %s\n", handed.complaint.c_str());
  }
  if (loaded.ok()) {
    runtime->policy = new config::Policy(std::move(loaded.policy()));
    runtime->holds_app_buffers = policy_touches_buffers(*runtime->policy);
    runtime->rules_match_peers = policy_matches_peers(*runtime->policy);
  } else {
    const std::string message = loaded.error().to_string();
    if (strict != nullptr && std::strcmp(strict, "1") == 0) {
      (void)std::fprintf(stderr, "tcptune: %s; exiting (TCPTUNE_STRICT=1)\n", message.c_str());
      _exit(kStrictExitStatus);
    }
    (void)std::fprintf(stderr, "tcptune: %s; running untuned\n", message.c_str());
  }
  const config::ArmFromEnvironment arm = config::arm_from_environment(env(config::kArmEnv, secure));
  if (!arm.problem.empty()) {
    say_on_stderr("tcptune: " + arm.problem + "\n");  // not into a socket that is stderr
  }
  runtime->arm = arm.arm;
  open_configured_log(runtime->policy, runtime->program, runtime->arm, secure);
  // pid (and, in jsonl, program and arm) are on every line already.
  telemetry::Record start("start");
  if (!log_is_jsonl()) {
    start.add("program", runtime->program);
    if (!runtime->arm.empty()) {
      start.add("arm", runtime->arm);
    }
  }
  if (runtime->policy != nullptr) {
    start.add("policy", runtime->policy->source).add("rules", static_cast<std::int64_t>(runtime->policy->rules.size()));
    start.add("policy_from", config::from_name(handed.from));
    if (!handed.snapshot.empty()) {
      start.add("policy_snapshot", handed.snapshot);
    }
    if (!handed.note.empty()) {
      start.add("policy_snapshot_note", handed.note);
    }
    // Before any hook reaches the core: the supervisor above, if any, leaves this process to it.
    if (announce_to_supervisor()) {
      start.add("supervisor_defers", true);
    }
    log_start_record(config::LogLevel::info, start);
  } else {
    start.add("policy_error", loaded.error().to_string()).add("running", "untuned");
    log_record(config::LogLevel::error, start);
  }
  g_runtime = runtime;
  g_owner_pid.store(getpid(), std::memory_order_relaxed);
  pthread_atfork(log_prepare_fork, after_fork_in_parent, after_fork_in_child);
  if (runtime->policy != nullptr) {
    // Read once now, not on a first use that may come from inside a signal handler.
    (void)host_buffer_facts();
    (void)namespace_restarts_after_idle();
    g_active.store(runtime, std::memory_order_release);
  }
}

}  // namespace

bool policy_touches_buffers(const config::Policy& policy) noexcept {
  for (int rule = -1; rule < static_cast<int>(policy.rules.size()); ++rule) {
    const config::Tuning& tuning = config::tuning_for(policy, rule);
    if (tuning.buffers.has_value() || tuning.override_app_buffers.value_or(false)) {
      return true;
    }
  }
  return false;
}

bool policy_matches_peers(const config::Policy& policy) noexcept {
  for (const config::Rule& rule : policy.rules) {
    if (!rule.match.peers.empty()) {
      return true;
    }
  }
  return false;
}

void ensure_initialized() noexcept {
  if (g_state.load(std::memory_order_acquire) == InitState::done || t_initializing) {
    return;
  }
  InitState expected = InitState::not_started;
  if (g_state.compare_exchange_strong(expected, InitState::running, std::memory_order_acq_rel)) {
    const ErrnoSaver saver;
    t_initializing = true;
    try {
      initialize();
    } catch (...) {
      // Out of memory while loading: stay untuned rather than take the app down.
    }
    t_initializing = false;
    g_state.store(InitState::done, std::memory_order_release);
    return;
  }
  while (g_state.load(std::memory_order_acquire) != InitState::done) {
    sched_yield();  // another thread is loading the policy; it takes milliseconds
  }
}

namespace {
std::atomic<const int*> g_vforks_in_flight{nullptr};
std::atomic<bool> g_forked_without_handlers{false};
}  // namespace

void set_vfork_count(const int* vforks_in_flight) noexcept {
  g_vforks_in_flight.store(vforks_in_flight, std::memory_order_relaxed);
}

void note_forked_without_handlers() noexcept {
  g_forked_without_handlers.store(true, std::memory_order_relaxed);
}

bool in_child_sharing_memory() noexcept {
  const pid_t owner = g_owner_pid.load(std::memory_order_relaxed);
  if (owner == 0) {
    return false;
  }
  // A vfork child's own thread raised the count before the system call, so the child sees it
  // raised; another thread that reads 0 is not that child.
  const int* vforks = g_vforks_in_flight.load(std::memory_order_relaxed);
  if (vforks != nullptr && __atomic_load_n(vforks, __ATOMIC_RELAXED) == 0 &&
      !g_forked_without_handlers.load(std::memory_order_relaxed)) {
    return false;
  }
  return getpid() != owner;
}

bool in_any_child_sharing_memory() noexcept {
  const pid_t owner = g_owner_pid.load(std::memory_order_relaxed);
  return owner != 0 && getpid() != owner;
}

const Runtime* active_runtime() noexcept {
  if (const Runtime* runtime = g_active.load(std::memory_order_acquire)) [[likely]] {
    return runtime;
  }
  ensure_initialized();
  return g_active.load(std::memory_order_acquire);
}

const HostBufferFacts& host_buffer_facts() {
  static const HostBufferFacts* facts = new HostBufferFacts(read_host_buffer_facts());
  return *facts;
}

void install_runtime_for_testing(const config::Policy* policy, std::string program) {
  // Tests swap runtimes between cases, when no hook is running, so the one installed before
  // can be freed; the current one stays reachable through g_runtime, like the real one.
  static Runtime* installed_for_testing = nullptr;
  auto* runtime = new Runtime;
  runtime->policy = policy;
  runtime->program = std::move(program);
  runtime->holds_app_buffers = policy == nullptr || policy_touches_buffers(*policy);
  runtime->rules_match_peers = policy == nullptr || policy_matches_peers(*policy);
  g_runtime = runtime;
  g_state.store(InitState::done, std::memory_order_release);
  g_active.store(policy != nullptr ? runtime : nullptr, std::memory_order_release);
  delete std::exchange(installed_for_testing, runtime);
}

}  // namespace tcptune::shim
