#include "runtime_state.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "netns_sysctl.hpp"

namespace tcptune::linkem {

namespace {

sockaddr_un control_address() {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  const std::string path = runtime_file("control.sock");
  path.copy(address.sun_path, sizeof address.sun_path - 1);
  return address;
}

// Waits for 'pid' to exit (or become a zombie: this host's init may never reap it). Not our child, so
// no waitpid: a pidfd becomes readable when the process exits.
bool wait_for_exit(pid_t pid, int timeout_ms) {
  const int pidfd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
  if (pidfd < 0) {
    return errno == ESRCH;
  }
  pollfd poll_fd{pidfd, POLLIN, 0};
  const int ready = poll(&poll_fd, 1, timeout_ms);
  close(pidfd);
  return ready > 0;
}

}  // namespace

std::string runtime_file(const char* name) {
  return std::string(kRuntimeDir) + "/" + name;
}

bool ensure_runtime_dir(std::string& error) {
  if (mkdir(kRuntimeDir, 0755) != 0 && errno != EEXIST) {
    error = std::string("mkdir ") + kRuntimeDir + ": " + std::strerror(errno);
    return false;
  }
  return true;
}

RuntimeLock::~RuntimeLock() {
  if (fd_ >= 0) {
    close(fd_);
  }
}

bool RuntimeLock::acquire(std::string& error) {
  if (!ensure_runtime_dir(error)) {
    return false;
  }
  const std::string path = runtime_file("lock");
  fd_ = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd_ < 0) {
    error = "open " + path + ": " + std::strerror(errno);
    return false;
  }
  while (flock(fd_, LOCK_EX) != 0) {
    if (errno != EINTR) {
      error = "flock " + path + ": " + std::strerror(errno);
      return false;
    }
  }
  return true;
}

bool write_pidfile(pid_t pid, std::string& error) {
  // Written aside and renamed: a reader never sees a half-written pid.
  const std::string path = runtime_file("pid");
  const std::string temporary = path + ".tmp";
  const int fd = open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    error = "open " + temporary + ": " + std::strerror(errno);
    return false;
  }
  const std::string line = std::to_string(pid) + "\n";
  const bool written = write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size());
  close(fd);
  if (!written || rename(temporary.c_str(), path.c_str()) != 0) {
    error = "writing " + path + ": " + std::strerror(errno);
    (void)unlink(temporary.c_str());
    return false;
  }
  return true;
}

bool is_linkem_daemon(pid_t pid) {
  std::string stat;
  std::string ignored;
  if (pid <= 0 || !read_sysctl("/proc/" + std::to_string(pid) + "/stat", stat, ignored)) {
    return false;
  }
  // "1234 (tcptune-linkemd) S ...": the name, then the state (Z and X are dead).
  const std::size_t open = stat.find('(');
  const std::size_t close_paren = stat.rfind(')');
  if (open == std::string::npos || close_paren == std::string::npos || close_paren + 2 >= stat.size()) {
    return false;
  }
  const std::string name = stat.substr(open + 1, close_paren - open - 1);
  const char state = stat[close_paren + 2];
  return name == kDaemonName && state != 'Z' && state != 'X';
}

std::optional<pid_t> running_daemon() {
  std::string text;
  std::string ignored;
  if (!read_sysctl(runtime_file("pid"), text, ignored)) {
    return std::nullopt;
  }
  char* end = nullptr;
  const long pid = std::strtol(text.c_str(), &end, 10);
  if (end == text.c_str() || *end != '\0' || pid <= 0 || !is_linkem_daemon(static_cast<pid_t>(pid))) {
    return std::nullopt;
  }
  return static_cast<pid_t>(pid);
}

bool stop_daemon(pid_t pid, int grace_ms, std::string& error) {
  if (kill(pid, SIGTERM) != 0) {
    return errno == ESRCH;
  }
  if (wait_for_exit(pid, grace_ms)) {
    return true;
  }
  (void)std::fprintf(stderr, "tcptune-linkem: daemon %d ignored SIGTERM for %d ms; killing it\n", pid, grace_ms);
  (void)kill(pid, SIGKILL);
  if (wait_for_exit(pid, 2000)) {
    return true;
  }
  error = "daemon " + std::to_string(pid) + " does not exit";
  return false;
}

bool query_daemon(std::string& reply, std::string& error) {
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    error = std::string("socket: ") + std::strerror(errno);
    return false;
  }
  const sockaddr_un address = control_address();
  if (connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0) {
    error = std::string("connect ") + address.sun_path + ": " + std::strerror(errno);
    close(fd);
    return false;
  }
  // The daemon answers between packets; a second is far more than it ever takes.
  const timeval timeout{1, 0};
  (void)setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  reply.clear();
  char buffer[4096];
  for (;;) {
    const ssize_t n = read(fd, buffer, sizeof buffer);
    if (n > 0) {
      reply.append(buffer, static_cast<std::size_t>(n));
    } else if (n == 0) {
      break;
    } else if (errno != EINTR) {
      error = std::string("read from the daemon: ") + std::strerror(errno);
      close(fd);
      return false;
    }
  }
  close(fd);
  while (!reply.empty() && reply.back() == '\n') {
    reply.pop_back();
  }
  if (reply.empty()) {
    error = "the daemon sent no status";
    return false;
  }
  return true;
}

int listen_control_socket(std::string& error) {
  const sockaddr_un address = control_address();
  (void)unlink(address.sun_path);
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    error = std::string("socket: ") + std::strerror(errno);
    return -1;
  }
  if (bind(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0 || listen(fd, 8) != 0) {
    error = std::string("listen on ") + address.sun_path + ": " + std::strerror(errno);
    close(fd);
    return -1;
  }
  (void)chmod(address.sun_path, 0600);
  return fd;
}

}  // namespace tcptune::linkem
