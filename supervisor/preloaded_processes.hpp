// The processes of the supervised program whose preloaded shim tunes them itself: each announced
// its active core (tcptune/config/core_announcement.hpp), and its calls are let through untouched
// and unrecorded, so that no connection is tuned or logged twice. A process is left alone only
// while its core's marker is still where it announced it: after an exec (a glibc program that
// runs a musl one) the address holds something else, or nothing, and the process is forgotten
// and supervised again. A forked child is a process of its own: it announces itself (the core's
// fork handler) before fork() returns in it. A process whose memory the supervisor may not read
// (not dumpable) is taken at its word: its sockets could not be reached from outside either.
#pragma once

#include <linux/seccomp.h>
#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <unordered_map>

namespace tcptune::supervisor {

class TrappedCall;

class PreloadedProcesses {
 public:
  // Kept at once before the processes that have ended are looked for and dropped.
  static constexpr std::size_t kSweepAbove = 4096;

  // Whether the call is an announcement: connect(kAnnouncementFd, marker, sizeof marker). From
  // the registers alone; any other connect is a connect.
  [[nodiscard]] static bool is_announcement(const seccomp_data& data) noexcept;

  // Answers an announcement by a thread of `process`: 0 where the marker reads right (the process
  // is left alone from now on), else the call goes on (the kernel answers EBADF).
  void take_announcement(const TrappedCall& call, pid_t process);

  // Whether `process` (the calling thread's) announced itself and its core's marker is still in
  // place: its call is the core's. A marker gone (an exec since) forgets the process.
  [[nodiscard]] bool core_tunes(const TrappedCall& call, pid_t process);

  [[nodiscard]] bool empty() const noexcept { return markers_.empty(); }
  // Announcements taken (processes, forked children included).
  [[nodiscard]] std::uint64_t announced() const noexcept { return announced_; }

 private:
  void drop_ended();

  std::unordered_map<pid_t, std::uint64_t> markers_;  // process -> its marker's address
  std::size_t sweep_above_ = kSweepAbove;
  std::uint64_t announced_ = 0;
};

}  // namespace tcptune::supervisor
