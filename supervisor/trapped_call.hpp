// One system call a thread of the supervised program is stopped in: a pidfd for the thread, a
// duplicate of one of its descriptors, its memory, its program's name. Every answer is checked
// against the notification still being pending, so a pid the kernel reused after the thread
// died is never mistaken for it.
#pragma once

#include <linux/seccomp.h>
#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace tcptune::supervisor {

class TrappedCall {
 public:
  TrappedCall(int listener, const seccomp_notif& request) noexcept;
  ~TrappedCall();
  TrappedCall(const TrappedCall&) = delete;
  TrappedCall& operator=(const TrappedCall&) = delete;

  [[nodiscard]] const seccomp_data& data() const noexcept { return request_.data; }
  [[nodiscard]] pid_t thread() const noexcept { return static_cast<pid_t>(request_.pid); }
  // The thread can be reached (pidfd open) and its call is still waiting for an answer.
  [[nodiscard]] bool still_pending() const noexcept;
  // A duplicate (close-on-exec) of the program's descriptor `fd`: the same open socket. -1 with
  // errno: EPERM when this process may not ptrace the program (it is not dumpable), EBADF.
  [[nodiscard]] int duplicate_fd(int fd) const noexcept;
  // `length` bytes at `address` in the program; false if any is unreadable.
  [[nodiscard]] bool read_memory(std::uint64_t address, void* out, std::size_t length) const noexcept;
  // The basename of the program's argv[0], as the preloaded shim names a program; "" if gone.
  [[nodiscard]] std::string program() const;
  // The thread group (process) id, for the records' pid; the thread's own id if unknown.
  [[nodiscard]] pid_t process() const;

  // The answers: let the call run as the program made it, or finish it with `result` (>= 0) or
  // an error (-errno) without running it.
  void continue_call() const noexcept;
  void complete_call(std::int64_t result, int error) const noexcept;

 private:
  int listener_;
  seccomp_notif request_;
  int pidfd_ = -1;
};

}  // namespace tcptune::supervisor
