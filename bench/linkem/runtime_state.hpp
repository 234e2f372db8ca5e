// The daemon's files under /run/tcptune-linkem/ (pidfile, log, control socket, lock) and finding,
// querying and stopping the daemon they describe. A pidfile is trusted only if its process is alive and
// is a linkem daemon (the pid may have been reused after a crash or SIGKILL).
#pragma once

#include <sys/types.h>
#include <optional>
#include <string>

namespace tcptune::linkem {

inline constexpr const char* kRuntimeDir = "/run/tcptune-linkem";
inline constexpr const char* kDaemonName = "tcptune-linkemd";  // comm of the daemon (at most 15 chars)

std::string runtime_file(const char* name);  // "pid", "log", "control.sock", "lock"
bool ensure_runtime_dir(std::string& error);

// An exclusive flock on the lock file, so that concurrent up/down/set do not interleave.
class RuntimeLock {
 public:
  RuntimeLock() = default;
  RuntimeLock(const RuntimeLock&) = delete;
  RuntimeLock& operator=(const RuntimeLock&) = delete;
  ~RuntimeLock();
  bool acquire(std::string& error);

 private:
  int fd_ = -1;
};

bool write_pidfile(pid_t pid, std::string& error);
// The pid of the running daemon, if the pidfile names one that is alive.
std::optional<pid_t> running_daemon();
bool is_linkem_daemon(pid_t pid);

// SIGTERM (the daemon then deletes the namespaces itself), and SIGKILL if it has not exited after
// 'grace_ms'. True when the process is gone.
bool stop_daemon(pid_t pid, int grace_ms, std::string& error);

// Asks the daemon on its control socket for its status line.
bool query_daemon(std::string& reply, std::string& error);
// The listening socket the daemon serves status on (nonblocking, close-on-exec). -1 on error.
int listen_control_socket(std::string& error);

}  // namespace tcptune::linkem
