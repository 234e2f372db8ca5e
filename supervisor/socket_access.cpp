#include "socket_access.hpp"

#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>

namespace tcptune::supervisor {

SocketAccess probe_socket_access() noexcept {
  SocketAccess access;
  const int pidfd = static_cast<int>(syscall(SYS_pidfd_open, getpid(), 0));
  if (pidfd < 0) {
    access.hand_over = true;
    access.pidfd_getfd_error = errno;
    access.refused_call = "pidfd_open";
    return access;
  }
  const int duplicate = static_cast<int>(syscall(SYS_pidfd_getfd, pidfd, pidfd, 0));
  if (duplicate < 0) {
    access.hand_over = true;
    access.pidfd_getfd_error = errno;
  } else {
    close(duplicate);
  }
  close(pidfd);
  return access;
}

std::string describe_refusal(const SocketAccess& access) {
  const int error = access.pidfd_getfd_error;
  std::string why = std::generic_category().message(error);
  if (error == EPERM) {
    why +=
        ": a seccomp profile, such as Docker's or containerd's default (Kubernetes RuntimeDefault) without "
        "CAP_SYS_PTRACE";
  } else if (error == ENOSYS) {
    why += ": a kernel before Linux 5.6, or a seccomp profile";
  }
  return std::string(access.refused_call) + " is refused here (" + why + ")";
}

}  // namespace tcptune::supervisor
