#include "exec_flush.hpp"

#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

#include "errno_saver.hpp"
#include "keep_warm.hpp"
#include "process_runtime.hpp"
#include "signal_context.hpp"
#include "telemetry_worker.hpp"

namespace tcptune::shim {

namespace {

// What glibc's execvp searches when PATH is unset (confstr's _CS_PATH).
constexpr std::string_view kDefaultSearchPath = "/bin:/usr/bin";

// Whether an exec of this file could succeed: false only where it must fail: nothing at the path
// (the stat resolves it as the exec does, and the kernel reads it: a bad pointer is EFAULT here
// as there), not a regular file, or no execute bit for anyone (EACCES, root included).
bool file_may_run(int dirfd, const char* path, int flags) noexcept {
  struct stat info {};
  if (syscall(SYS_newfstatat, dirfd, path, &info, flags & (AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW)) != 0) {
    return false;
  }
  return S_ISREG(info.st_mode) && (info.st_mode & (S_IXUSR | S_IXGRP | S_IXOTH)) != 0;
}

// As glibc's execvpe looks for `file`: as a path when it has a slash, else in each directory of
// PATH (an empty entry is the working directory). libc reads `file` the same way.
bool program_may_run(const char* file) noexcept {
  if (file == nullptr || *file == '\0') {
    return file == nullptr;  // NULL: let the exec say what it says; "": ENOENT
  }
  if (std::strchr(file, '/') != nullptr) {
    return file_may_run(AT_FDCWD, file, 0);
  }
  try {
    const char* search = std::getenv("PATH");
    std::string_view rest = search != nullptr ? std::string_view(search) : kDefaultSearchPath;
    std::string candidate;
    for (;;) {
      const std::size_t colon = rest.find(':');
      const std::string_view directory = rest.substr(0, colon);
      candidate.assign(directory);
      if (!candidate.empty()) {
        candidate += '/';
      }
      candidate += file;
      if (file_may_run(AT_FDCWD, candidate.c_str(), 0)) {
        return true;
      }
      if (colon == std::string_view::npos) {
        return false;
      }
      rest.remove_prefix(colon + 1);
    }
  } catch (...) {
    return true;  // out of memory: flush, as for an exec that may succeed
  }
}

bool may_succeed(const ExecTarget& target) noexcept {
  return target.search ? program_may_run(target.path) : file_may_run(target.dirfd, target.path, target.flags);
}

}  // namespace

bool before_exec(const ExecTarget& target) noexcept {
  const ErrnoSaver saver;
  if (in_any_child_sharing_memory()) {
    // A vfork child: the records and the worker are its parent's, which goes on. The sockets the
    // program exec'd inherits (no FD_CLOEXEC) may be written by it past the parent's gate: no
    // longer kept warm there.
    if (keep_warm_started()) {
      keep_warm_before_exec_in_child();
    }
    return false;
  }
  if (in_signal_handler() || !may_succeed(target)) {
    return false;
  }
  return flush_telemetry_before_exec();
}

void after_failed_exec(bool flushed) noexcept {
  if (flushed) {
    const int error = errno;
    telemetry_after_failed_exec(error);
    errno = error;
  }
}

}  // namespace tcptune::shim
