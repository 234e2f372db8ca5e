#include "thread_handles.hpp"

#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>

#include "kernel_abi.hpp"

namespace tcptune::supervisor {

namespace {

// Enough for Go's threads; the table is emptied (and its descriptors closed) beyond it, or when
// the supervisor runs out of descriptors.
constexpr std::size_t kMostThreads = 256;

int pidfd_open(pid_t pid, unsigned flags) noexcept {
  return static_cast<int>(syscall(SYS_pidfd_open, pid, flags));
}

int open_proc_file(pid_t pid, const char* name) noexcept {
  char path[64];
  (void)std::snprintf(path, sizeof path, "/proc/%d/%s", static_cast<int>(pid), name);
  return ::open(path, O_RDONLY | O_CLOEXEC);
}

// The start of an open /proc file (enough for argv[0]), read with one pread(2).
std::string read_start(int fd) {
  char text[4096];
  const ssize_t length = fd < 0 ? -1 : ::pread(fd, text, sizeof text, 0);
  return length > 0 ? std::string(text, static_cast<std::size_t>(length)) : std::string();
}

void close_if_open(int fd) noexcept {
  if (fd >= 0) {
    close(fd);
  }
}

}  // namespace

ThreadHandles::~ThreadHandles() {
  clear();
}

void ThreadHandles::clear() noexcept {
  for (auto& [thread, handles] : entries_) {
    close_if_open(handles.pidfd);
    close_if_open(handles.cmdline_fd);
  }
  entries_.clear();
}

ThreadHandles::Entry& ThreadHandles::entry(pid_t thread) {
  if (const auto found = entries_.find(thread); found != entries_.end()) {
    return found->second;
  }
  if (entries_.size() >= kMostThreads) {
    clear();
  }
  return entries_[thread];
}

int ThreadHandles::pidfd(pid_t thread) {
  Entry& handles = entry(thread);
  if (handles.pidfd < 0) {
    // PIDFD_THREAD reaches a thread that is not the group leader (Go's are seldom the leader);
    // before 6.9 a pidfd for the process itself serves as well, since descriptors are shared.
    handles.pidfd = pidfd_open(thread, kernel::kPidfdThread);
    if (handles.pidfd < 0 && errno == EINVAL) {
      handles.pidfd = pidfd_open(process(thread), 0);
    }
    if (handles.pidfd < 0 && (errno == EMFILE || errno == ENFILE) && entries_.size() > 1) {
      clear();
      return pidfd(thread);  // once: only this thread's entry is left to clear
    }
  }
  return handles.pidfd;
}

pid_t ThreadHandles::process(pid_t thread) {
  Entry& handles = entry(thread);
  if (handles.process != 0) {
    return handles.process;
  }
  kernel::PidfdInfo info{};
  info.mask = kernel::kPidfdInfoPid;
  if (handles.pidfd >= 0 && ioctl(handles.pidfd, kernel::kPidfdGetInfo, &info) == 0 &&
      (info.mask & kernel::kPidfdInfoPid) != 0 && info.tgid != 0) {
    handles.process = static_cast<pid_t>(info.tgid);
    return handles.process;
  }
  // Before 6.13, or without a pidfd: the Tgid line of /proc/TID/status.
  const int fd = open_proc_file(thread, "status");
  const std::string status = read_start(fd);
  close_if_open(fd);
  const std::size_t tgid = status.find("\nTgid:");
  handles.process =
      tgid == std::string::npos ? thread : static_cast<pid_t>(std::strtol(status.c_str() + tgid + 6, nullptr, 10));
  return handles.process;
}

std::string ThreadHandles::program(pid_t thread) {
  Entry& handles = entry(thread);
  if (handles.cmdline_fd < 0) {
    handles.cmdline_fd = open_proc_file(thread, "cmdline");
  }
  const std::string cmdline = read_start(handles.cmdline_fd);
  if (!cmdline.empty()) {
    const std::string argv0 = cmdline.substr(0, cmdline.find('\0'));
    const std::size_t slash = argv0.rfind('/');
    handles.program = slash == std::string::npos ? argv0 : argv0.substr(slash + 1);
  }
  return handles.program;
}

std::string ThreadHandles::program_once(pid_t thread) {
  Entry& handles = entry(thread);
  return handles.program.empty() ? program(thread) : handles.program;
}

void ThreadHandles::forget(pid_t thread) {
  if (const auto found = entries_.find(thread); found != entries_.end()) {
    close_if_open(found->second.pidfd);
    close_if_open(found->second.cmdline_fd);
    entries_.erase(found);
  }
}

}  // namespace tcptune::supervisor
