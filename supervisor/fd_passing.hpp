// A status and perhaps a file descriptor across a unix socket (SCM_RIGHTS): how the supervised
// child hands its seccomp listener to the supervisor before it execs the program, or says why
// it has none.
#pragma once

namespace tcptune::supervisor {

// Sends `status` (an errno, 0 for none) and, when `fd` >= 0, the descriptor. 0, or the errno.
int send_status(int channel, int status, int fd) noexcept;
// Receives them; `fd` is -1 (close-on-exec otherwise) when none came. False when nothing came:
// the peer closed the channel first.
bool receive_status(int channel, int& status, int& fd) noexcept;

}  // namespace tcptune::supervisor
