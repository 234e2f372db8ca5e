// Process lifecycle: the one-time initialisation (policy, log, fork handlers) that either the
// constructor or the first hook triggers, whichever comes first.
#pragma once

#include <string>

#include "app_settings.hpp"
#include "tcptune/config/buffer_plan.hpp"
#include "tcptune/config/policy.hpp"

namespace tcptune::shim {

struct Runtime {
  const config::Policy* policy = nullptr;  // immutable after initialisation
  std::string program;
  std::string arm;  // TCPTUNE_ARM, validated (tcptune/config/arm_label.hpp); empty: none
  // Some rule (or [defaults]) sets buffers or override_app_buffers: the app's SO_SNDBUF and
  // SO_RCVBUF before connect or listen are held until the rule is known. Without, they go
  // straight to the kernel (the observe-only policy changes nothing, not even when they land).
  bool holds_app_buffers = true;
  // Some rule matches on the peer's address: an accepted socket's peer is needed to choose its
  // rule even without a log (otherwise only the log's records name it).
  bool rules_match_peers = true;
};

// Whether a policy's rules can size or override buffers (Runtime::holds_app_buffers).
bool policy_touches_buffers(const config::Policy& policy) noexcept;
// Whether some rule matches on peer addresses (Runtime::rules_match_peers).
bool policy_matches_peers(const config::Policy& policy) noexcept;

// Idempotent and thread-safe; a recursive call from inside initialisation returns at once.
void ensure_initialized() noexcept;

// The runtime when the shim is tuning, or nullptr: while this thread is initialising it,
// or when the policy failed to load (fail-open: the process runs untuned).
const Runtime* active_runtime() noexcept;

// True in a child that runs in this process's memory without the fork handlers having run: a
// vfork() child (Python's subprocess, posix_spawn) until it execs, or one made by _Fork() or
// clone(). The fd table and the worker's state are then the parent's, not its own. One getpid,
// asked only while a vfork() is in flight through the stage's hook or after a _Fork() (a child
// of a raw clone or vfork system call, which no hook sees, is taken for its parent).
bool in_child_sharing_memory() noexcept;

// The same, asked of getpid every time: true in a child of a raw clone or vfork system call
// too. For exec and _exit, which are rare and which, taken for the parent's, would stop the
// parent's worker and write its summary from the child.
bool in_any_child_sharing_memory() noexcept;

// The stage's count of vfork() calls in flight (nullptr: unknown, getpid every time).
void set_vfork_count(const int* vforks_in_flight) noexcept;

// In a child of _Fork(), which runs no fork handlers: the shim's state stays its parent's.
void note_forked_without_handlers() noexcept;

// Host buffer limits, read from /proc/sys once, on the first socket that needs them.
const HostBufferFacts& host_buffer_facts();

// Initialise from an explicit policy instead of the environment (unit tests of the core).
void install_runtime_for_testing(const config::Policy* policy, std::string program);

}  // namespace tcptune::shim
