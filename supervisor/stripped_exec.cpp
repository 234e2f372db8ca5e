#include "stripped_exec.hpp"

#include <fcntl.h>
#include <linux/limits.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include "owned_fd.hpp"
#include "trapped_call.hpp"

namespace tcptune::supervisor {

namespace {

// The file the call would run, as a path for this process: the thread's root for an absolute
// path, else its working directory or the directory descriptor of execveat. Empty if none.
std::string path_through_proc(pid_t thread, int dirfd, const std::string& path, bool empty_path) {
  const std::string proc = "/proc/" + std::to_string(thread);
  if (path.empty()) {
    return empty_path && dirfd >= 0 ? proc + "/fd/" + std::to_string(dirfd) : std::string();
  }
  // The thread's own descriptors (fexecve's fallback, `exec /dev/fd/N`): /proc/self read here
  // would be this process's.
  for (const std::string_view own : {"/proc/self/", "/proc/thread-self/"}) {
    if (path.starts_with(own)) {
      return proc + "/" + path.substr(own.size());
    }
  }
  if (path.starts_with("/dev/fd/")) {
    return proc + "/fd/" + path.substr(std::string_view("/dev/fd/").size());
  }
  if (path.front() == '/') {
    return proc + "/root" + path;
  }
  return proc + (dirfd == AT_FDCWD ? std::string("/cwd/") : "/fd/" + std::to_string(dirfd) + "/") + path;
}

struct Ids {
  uid_t uid = 0;
  gid_t gid = 0;
};

// The thread's real ids, the first of the Uid and Gid lines of /proc/TID/status (real,
// effective, saved, filesystem): under no_new_privs an exec gets them as its effective ids, so a
// setuid file owned by another than the real uid (and file capabilities, unless the real uid is
// root) lose what they would give.
std::optional<Ids> real_ids(pid_t thread) {
  const OwnedFd status(::open(("/proc/" + std::to_string(thread) + "/status").c_str(), O_RDONLY | O_CLOEXEC));
  char text[4096];
  const ssize_t length = status.get() < 0 ? -1 : ::read(status.get(), text, sizeof text - 1);
  if (length <= 0) {
    return std::nullopt;
  }
  const std::string lines(text, static_cast<std::size_t>(length));
  const auto first_field = [&lines](const char* label) -> std::optional<unsigned long> {
    const std::size_t at = lines.find(label);
    if (at == std::string::npos) {
      return std::nullopt;
    }
    return std::strtoul(lines.c_str() + at + std::char_traits<char>::length(label), nullptr, 10);
  };
  const std::optional<unsigned long> uid = first_field("\nUid:");
  const std::optional<unsigned long> gid = first_field("\nGid:");
  if (!uid.has_value() || !gid.has_value()) {
    return std::nullopt;
  }
  return Ids{static_cast<uid_t>(*uid), static_cast<gid_t>(*gid)};
}

}  // namespace

std::optional<StrippedExec> stripped_exec(const TrappedCall& call) {
  const seccomp_data& data = call.data();
  const bool is_execveat = data.nr == SYS_execveat;
  const int dirfd = is_execveat ? static_cast<int>(data.args[0]) : AT_FDCWD;
  const int flags = is_execveat ? static_cast<int>(data.args[4]) : 0;
  StrippedExec exec;
  if (!call.read_string(data.args[is_execveat ? 1 : 0], exec.path, PATH_MAX)) {
    return std::nullopt;  // the kernel answers EFAULT or ENAMETOOLONG
  }
  const std::string file = path_through_proc(call.thread(), dirfd, exec.path, (flags & AT_EMPTY_PATH) != 0);
  if (file.empty()) {
    return std::nullopt;
  }
  struct stat info {};
  const int looked = (flags & AT_SYMLINK_NOFOLLOW) != 0 ? lstat(file.c_str(), &info) : stat(file.c_str(), &info);
  if (looked != 0 || !S_ISREG(info.st_mode)) {
    return std::nullopt;
  }
  const bool setuid = (info.st_mode & S_ISUID) != 0;
  const bool setgid = (info.st_mode & (S_ISGID | S_IXGRP)) == (S_ISGID | S_IXGRP);  // else mandatory locking
  const bool capabilities = getxattr(file.c_str(), "security.capability", nullptr, 0) > 0;
  if (!setuid && !setgid && !capabilities) {
    return std::nullopt;  // every exec but the rare privileged one ends here
  }
  struct statvfs mount {};
  const std::optional<Ids> ids = real_ids(call.thread());
  if (!ids.has_value() || (statvfs(file.c_str(), &mount) == 0 && (mount.f_flag & ST_NOSUID) != 0)) {
    return std::nullopt;  // on a nosuid mount the kernel ignores them anyway
  }
  if (exec.path.empty()) {  // fexecve: the descriptor's file by its path
    char target[PATH_MAX];
    const ssize_t length = readlink(file.c_str(), target, sizeof target);
    exec.path = length > 0 ? std::string(target, static_cast<std::size_t>(length)) : file;
  }
  const auto add = [&exec](const std::string& gain) { exec.gains += (exec.gains.empty() ? "" : " and ") + gain; };
  if (setuid && info.st_uid != ids->uid) {
    add("is setuid (owner uid " + std::to_string(info.st_uid) + ")");
  }
  if (setgid && info.st_gid != ids->gid) {
    add("is setgid (group gid " + std::to_string(info.st_gid) + ")");
  }
  if (capabilities && ids->uid != 0) {  // root's own capabilities are a superset
    add("has file capabilities");
  }
  return exec.gains.empty() ? std::nullopt : std::optional<StrippedExec>(std::move(exec));
}

}  // namespace tcptune::supervisor
