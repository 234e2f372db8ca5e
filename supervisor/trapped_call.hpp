// One system call a thread of the supervised program is stopped in: a duplicate of one of its
// descriptors (through the thread's pidfd, kept by ThreadHandles), its memory, a descriptor
// handed to it as the call's answer. Every answer is checked
// against the notification still being pending, so a pid the kernel reused after the thread
// died is never mistaken for it.
#pragma once

#include <linux/seccomp.h>
#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "thread_handles.hpp"

namespace tcptune::supervisor {

class TrappedCall {
 public:
  // `threads` keeps the calling thread's pidfd from one call to the next.
  TrappedCall(int listener, const seccomp_notif& request, ThreadHandles& threads) noexcept
      : listener_(listener), request_(request), threads_(threads) {}

  [[nodiscard]] const seccomp_data& data() const noexcept { return request_.data; }
  [[nodiscard]] pid_t thread() const noexcept { return static_cast<pid_t>(request_.pid); }
  // The thread's call is still waiting for an answer.
  [[nodiscard]] bool still_pending() const noexcept;
  // A duplicate (close-on-exec) of the program's descriptor `fd`: the same open socket. -1 with
  // errno: EPERM when this process may not ptrace the program (it is not dumpable), EBADF,
  // ESRCH when the thread is gone.
  [[nodiscard]] int duplicate_fd(int fd) const;
  // `length` bytes at `address` in the program; false if any is unreadable.
  [[nodiscard]] bool read_memory(std::uint64_t address, void* out, std::size_t length) const noexcept;
  // The NUL-terminated string at `address` (a path), read a page at a time up to its end so that
  // one ending just before an unmapped page is read whole; false if unreadable or longer than
  // `most` bytes.
  [[nodiscard]] bool read_string(std::uint64_t address, std::string& out, std::size_t most) const;

  // The answers: let the call run as the program made it, or finish it with `result` (>= 0) or
  // an error (-errno) without running it.
  void continue_call() const noexcept;
  void complete_call(std::int64_t result, int error) const noexcept;
  // Installs this process's `fd` in the program at its lowest free number (close-on-exec if
  // `cloexec`) and answers the call with that number, in one step (SECCOMP_ADDFD_FLAG_SEND).
  // The number, or -1 with errno, the call still waiting unless ENOENT: ENOENT (the call is gone),
  // EMFILE (the program's RLIMIT_NOFILE), EINVAL or ENOTTY (a kernel before 5.14).
  [[nodiscard]] int hand_over(int fd, bool cloexec) const noexcept;

 private:
  int listener_;
  seccomp_notif request_;
  ThreadHandles& threads_;
};

}  // namespace tcptune::supervisor
