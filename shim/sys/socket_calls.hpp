// The socket calls the tuning core makes (setsockopt, getsockopt), behind one seam. By default
// they are plain system calls, which is what a process that does not interpose libc (the
// supervisor) wants; the preloaded shim installs libc's next definitions instead, so that its
// own hooks are never re-entered and interposers later in the chain see the calls. Unit tests
// swap in calls that fail on purpose, to reach every refusal.
#pragma once

#include <sys/socket.h>

namespace tcptune::shim {

struct SocketCalls {
  int (*setsockopt)(int fd, int level, int name, const void* value, socklen_t length) noexcept;
  int (*getsockopt)(int fd, int level, int name, void* value, socklen_t* length) noexcept;
};

// The calls in force. Lock-free, async-signal-safe.
const SocketCalls& socket_calls() noexcept;

// From now on `calls` (static storage) are made. For the process's own setup, once.
void install_socket_calls(const SocketCalls& calls) noexcept;

inline int core_setsockopt(int fd, int level, int name, const void* value, socklen_t length) noexcept {
  return socket_calls().setsockopt(fd, level, name, value, length);
}
inline int core_getsockopt(int fd, int level, int name, void* value, socklen_t* length) noexcept {
  return socket_calls().getsockopt(fd, level, name, value, length);
}

// Unit tests: `calls` are made instead until the guard is destroyed (one at a time).
class ScopedSocketCalls {
 public:
  explicit ScopedSocketCalls(const SocketCalls& calls) noexcept;
  ~ScopedSocketCalls();
  ScopedSocketCalls(const ScopedSocketCalls&) = delete;
  ScopedSocketCalls& operator=(const ScopedSocketCalls&) = delete;

 private:
  const SocketCalls* previous_;
};

}  // namespace tcptune::shim
