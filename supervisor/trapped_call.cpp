#include "trapped_call.hpp"

#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>

#include "kernel_abi.hpp"

namespace tcptune::supervisor {

namespace {

int pidfd_open(pid_t pid, unsigned flags) noexcept {
  return static_cast<int>(syscall(SYS_pidfd_open, pid, flags));
}

// The start of /proc/PID/NAME (enough for argv[0] and for Tgid in status), read with one
// read(2): no stream machinery on the path every trapped call takes.
std::string read_proc_file(pid_t pid, const char* name) {
  char path[64];
  (void)std::snprintf(path, sizeof path, "/proc/%d/%s", static_cast<int>(pid), name);
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return {};
  }
  char text[4096];
  const ssize_t length = ::read(fd, text, sizeof text);
  ::close(fd);
  return length > 0 ? std::string(text, static_cast<std::size_t>(length)) : std::string();
}

}  // namespace

TrappedCall::TrappedCall(int listener, const seccomp_notif& request) noexcept : listener_(listener), request_(request) {
  // PIDFD_THREAD reaches a thread that is not the group leader (Go's are seldom the leader);
  // before 6.9 a pidfd for the process itself serves as well, since descriptors are shared.
  pidfd_ = pidfd_open(thread(), kernel::kPidfdThread);
  if (pidfd_ < 0 && errno == EINVAL) {
    pidfd_ = pidfd_open(process(), 0);
  }
}

TrappedCall::~TrappedCall() {
  if (pidfd_ >= 0) {
    close(pidfd_);
  }
}

bool TrappedCall::still_pending() const noexcept {
  std::uint64_t id = request_.id;
  return pidfd_ >= 0 && ioctl(listener_, SECCOMP_IOCTL_NOTIF_ID_VALID, &id) == 0;
}

int TrappedCall::duplicate_fd(int fd) const noexcept {
  if (pidfd_ < 0) {
    errno = ESRCH;
    return -1;
  }
  return static_cast<int>(syscall(SYS_pidfd_getfd, pidfd_, fd, 0));
}

bool TrappedCall::read_memory(std::uint64_t address, void* out, std::size_t length) const noexcept {
  iovec local{out, length};
  // An address in the program, never dereferenced here.
  iovec remote{reinterpret_cast<void*>(static_cast<std::uintptr_t>(address)),
               length};  // NOLINT(performance-no-int-to-ptr)
  return process_vm_readv(thread(), &local, 1, &remote, 1, 0) == static_cast<ssize_t>(length);
}

std::string TrappedCall::program() const {
  const std::string cmdline = read_proc_file(thread(), "cmdline");
  const std::string argv0 = cmdline.substr(0, cmdline.find('\0'));
  const std::size_t slash = argv0.rfind('/');
  return slash == std::string::npos ? argv0 : argv0.substr(slash + 1);
}

pid_t TrappedCall::process() const {
  const std::string status = read_proc_file(thread(), "status");
  const std::size_t tgid = status.find("\nTgid:");
  return tgid == std::string::npos ? thread() : static_cast<pid_t>(std::strtol(status.c_str() + tgid + 6, nullptr, 10));
}

void TrappedCall::continue_call() const noexcept {
  seccomp_notif_resp response{};
  response.id = request_.id;
  response.flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
  // ENOENT: the call was withdrawn (a signal, the thread died); nothing is left to answer.
  (void)ioctl(listener_, SECCOMP_IOCTL_NOTIF_SEND, &response);
}

void TrappedCall::complete_call(std::int64_t result, int error) const noexcept {
  seccomp_notif_resp response{};
  response.id = request_.id;
  response.val = result;
  response.error = error != 0 ? -error : 0;
  (void)ioctl(listener_, SECCOMP_IOCTL_NOTIF_SEND, &response);
}

}  // namespace tcptune::supervisor
