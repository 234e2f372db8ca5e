// What the supervisor keeps per thread of the supervised program between its trapped calls: a
// pidfd, the thread's process id, and an open /proc/TID/cmdline. Opening them for every call
// was most of the supervisor's work per connect (a /proc open costs several microseconds here).
// A pidfd names one thread for life: once that thread is gone, a thread that reuses its id gets
// a fresh entry (forget). The cmdline is read again at each call, so an exec shows at once.
#pragma once

#include <sys/types.h>

#include <string>
#include <unordered_map>

namespace tcptune::supervisor {

class ThreadHandles {
 public:
  ThreadHandles() = default;
  ~ThreadHandles();
  ThreadHandles(const ThreadHandles&) = delete;
  ThreadHandles& operator=(const ThreadHandles&) = delete;

  // A pidfd for the thread (for its process before Linux 6.9), -1 with errno if it is gone.
  int pidfd(pid_t thread);
  // The thread group (process) id, for the records' pid; the thread's own id if unknown. Read
  // once per thread (a thread keeps its process for life).
  pid_t process(pid_t thread);
  // The basename of the program's argv[0], as the preloaded shim names a program, read now (an
  // exec shows at once); the last one read if the thread is gone, "" if never read.
  std::string program(pid_t thread);
  // The same, read at this thread's first call only: an exec since is not seen.
  std::string program_once(pid_t thread);
  // Drops what is kept for `thread`: its pidfd named a thread that has died.
  void forget(pid_t thread);

 private:
  struct Entry {
    int pidfd = -1;
    int cmdline_fd = -1;
    pid_t process = 0;
    std::string program;
  };
  Entry& entry(pid_t thread);
  void clear() noexcept;

  std::unordered_map<pid_t, Entry> entries_;
};

}  // namespace tcptune::supervisor
