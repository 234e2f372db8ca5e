// How the supervisor reaches the program's sockets here. Where pidfd_getfd works it duplicates
// the program's socket at each trapped call. Docker's and containerd's default seccomp profiles
// (Kubernetes RuntimeDefault) refuse pidfd_getfd (EPERM) to a container without CAP_SYS_PTRACE;
// the supervisor then creates each TCP socket itself when the program asks for one and hands it
// over (socket_hand_over.hpp), keeping a reference until its connect or listen.
#pragma once

#include <string>

namespace tcptune::supervisor {

struct SocketAccess {
  bool hand_over = false;     // pidfd_getfd refused: sockets are created by tcptune and handed over
  int pidfd_getfd_error = 0;  // why (EPERM: a seccomp profile; ENOSYS: a kernel before 5.6, or a profile)
  const char* refused_call = "pidfd_getfd";  // or "pidfd_open", where even that is refused (older profiles)
};

// Tried once, in this process (which the program's filters are inherited from), on a descriptor
// of its own: an access check never refuses that, so a refusal is the system call's own.
SocketAccess probe_socket_access() noexcept;

// "pidfd_getfd is refused here (Operation not permitted: a seccomp profile, such as ...)".
std::string describe_refusal(const SocketAccess& access);

// The fix, for every message that says tuning is impossible because of the refusal.
inline constexpr const char* kAllowPidfdGetfd =
    "allow pidfd_getfd: docker run --cap-add SYS_PTRACE, in Kubernetes securityContext.capabilities.add "
    "[\"SYS_PTRACE\"], or a seccomp profile that allows pidfd_getfd";

}  // namespace tcptune::supervisor
