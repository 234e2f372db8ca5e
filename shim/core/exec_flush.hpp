// exec replaces the process image, and with it the telemetry worker and whatever it had not yet
// written. The exec hooks (every function of the exec family: glibc's call its internal execve,
// past the hooks) call before_exec first: the records still queued are written, then a
// conn_close for each measured connection and the summary, as at exit (telemetry_worker.hpp).
// Not when the exec cannot succeed (nothing to run at the path: the program goes on as if it
// had not tried), not from inside a signal handler (writing a record allocates and locks), and
// not in a child that shares its parent's memory (vfork: the state is the parent's).
#pragma once

#include <fcntl.h>

namespace tcptune::shim {

// What an exec names: a path (from `dirfd`, with execveat's `flags`), or with `search` a file
// looked for in PATH as execvp does.
struct ExecTarget {
  int dirfd = AT_FDCWD;
  const char* path = nullptr;
  int flags = 0;
  bool search = false;
};

// True when it flushed: should the exec return (it failed), after_failed_exec must follow.
// Preserves errno.
[[nodiscard]] bool before_exec(const ExecTarget& target) noexcept;
// The exec returned: the program goes on, and so do its records (a new start record names the
// failure). Preserves errno.
void after_failed_exec(bool flushed) noexcept;

}  // namespace tcptune::shim
