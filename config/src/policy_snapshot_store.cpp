#include "tcptune/config/policy_snapshot_store.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <system_error>
#include <utility>
#include <variant>

namespace tcptune::config {

namespace {

// strerror's text without its buffer: this runs inside the app, whose threads may use it.
std::string errno_text(int error) {
  return std::generic_category().message(error);
}

// Why `info` may not be trusted by `euid`, or empty: it belongs to another user, or someone other
// than its owner may write to it.
std::string not_own(const struct stat& info, uid_t euid) {
  if (info.st_uid != euid) {
    return "owned by uid " + std::to_string(info.st_uid) + ", not by this user (uid " + std::to_string(euid) + ")";
  }
  if ((info.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    char mode[8];
    (void)std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(info.st_mode & 07777));
    return std::string("writable by others than its owner (mode ") + mode + ")";
  }
  return {};
}

bool write_all(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t wrote = ::write(fd, bytes.data(), bytes.size());
    if (wrote < 0 && errno == EINTR) {
      continue;
    }
    if (wrote <= 0) {
      return false;
    }
    bytes.remove_prefix(static_cast<std::size_t>(wrote));
  }
  return true;
}

struct FdCloser {
  int fd;
  explicit FdCloser(int descriptor) : fd(descriptor) {}
  FdCloser(const FdCloser&) = delete;
  FdCloser& operator=(const FdCloser&) = delete;
  ~FdCloser() {
    if (fd >= 0) {
      (void)::close(fd);
    }
  }
};

bool is_own_directory(const char* path, uid_t euid) {
  struct stat info {};
  return path != nullptr && path[0] == '/' && ::stat(path, &info) == 0 && S_ISDIR(info.st_mode) && info.st_uid == euid;
}

}  // namespace

OpenedSnapshotStore open_snapshot_store(const SnapshotStorePlace& place) {
  OpenedSnapshotStore opened;
  std::string directory;
  bool chosen = false;  // named by TCPTUNE_POLICY_CACHE: any problem with it is worth a line
  if (place.setting != nullptr && *place.setting != '\0') {
    if (std::strcmp(place.setting, "off") == 0) {
      opened.why = "TCPTUNE_POLICY_CACHE=off";
      return opened;
    }
    if (place.setting[0] != '/') {
      opened.why = std::string("TCPTUNE_POLICY_CACHE='") + place.setting + "' is neither an absolute directory nor off";
      opened.complain = true;
      return opened;
    }
    directory = place.setting;
    chosen = true;
  } else if (is_own_directory(place.runtime_dir, place.euid)) {
    directory = std::string(place.runtime_dir) + "/tcptune";
  } else if (const std::string run_user = std::string(place.run_user) + "/" + std::to_string(place.euid);
             is_own_directory(run_user.c_str(), place.euid)) {
    directory = run_user + "/tcptune";
  } else {
    // A directory everyone may write to: the name is per user, and one squatted by another user
    // is refused below for its owner.
    const bool tmp_ok = place.tmp_dir != nullptr && place.tmp_dir[0] == '/';
    directory = std::string(tmp_ok ? place.tmp_dir : "/tmp") + "/tcptune-" + std::to_string(place.euid);
  }
  while (directory.size() > 1 && directory.back() == '/') {
    directory.pop_back();
  }
  const int mkdir_error = ::mkdir(directory.c_str(), 0700) == 0 ? 0 : errno;
  const int fd = ::open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    const int error = errno;
    // Nowhere to keep snapshots (a read-only or missing directory) is no fault of the policy's:
    // the start record says so; something in the way (a symbolic link, a file) is worth a line.
    const int cause = mkdir_error != 0 && mkdir_error != EEXIST ? mkdir_error : error;
    opened.why = "cannot use " + directory + " for compiled policies: " +
                 (error == ELOOP || error == ENOTDIR ? std::string("not a directory (a symbolic link or a file)")
                                                     : errno_text(cause));
    opened.complain = chosen || error == ELOOP || error == ENOTDIR;
    return opened;
  }
  struct stat info {};
  if (::fstat(fd, &info) != 0) {
    const int error = errno;
    (void)::close(fd);
    opened.why = "cannot use " + directory + " for compiled policies: " + errno_text(error);
    return opened;
  }
  if (mkdir_error == 0 && (info.st_mode & 07777) != 0700 && ::fchmod(fd, 0700) == 0) {
    info.st_mode = (info.st_mode & ~07777U) | 0700;  // made here under an odd umask: the owner needs all of it
  }
  if (const std::string problem = not_own(info, place.euid); !problem.empty()) {
    (void)::close(fd);
    opened.why = "not using " + directory + " for compiled policies: " + problem;
    opened.complain = true;
    return opened;
  }
  opened.store.emplace(PolicySnapshotStore(std::move(directory), fd, place.euid));
  return opened;
}

PolicySnapshotStore::PolicySnapshotStore(PolicySnapshotStore&& other) noexcept
    : directory_(std::move(other.directory_)), fd_(std::exchange(other.fd_, -1)), euid_(other.euid_) {}

PolicySnapshotStore::~PolicySnapshotStore() {
  if (fd_ >= 0) {
    (void)::close(fd_);
  }
}

std::string PolicySnapshotStore::name_for(const SnapshotKey& key) {
  char name[32];
  (void)std::snprintf(name, sizeof name, "policy-%016" PRIx64, snapshot_key_hash(key));
  return name;
}

std::string PolicySnapshotStore::file_for(const SnapshotKey& key) const {
  return directory_ + "/" + name_for(key);
}

PolicySnapshotStore::Found PolicySnapshotStore::find(const SnapshotKey& key) const {
  Found found;
  const std::string name = name_for(key);
  // O_NONBLOCK: a FIFO put here must not hold up the app.
  const int fd = ::openat(fd_, name.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) {
    if (errno != ENOENT) {
      found.refused = errno == ELOOP ? std::string("a symbolic link") : "cannot read: " + errno_text(errno);
    }
    return found;
  }
  const FdCloser closer{fd};
  struct stat info {};
  if (::fstat(fd, &info) != 0) {
    found.refused = "cannot read: " + errno_text(errno);
    return found;
  }
  if (!S_ISREG(info.st_mode)) {
    found.refused = "not a regular file";
    return found;
  }
  if (std::string problem = not_own(info, euid_); !problem.empty()) {
    found.refused = std::move(problem);
    return found;
  }
  if (static_cast<std::uint64_t>(info.st_size) > kMaxSnapshotBytes) {
    found.refused = "larger than a compiled policy may be";
    return found;
  }
  std::string bytes(static_cast<std::size_t>(info.st_size) + 1, '\0');
  std::size_t length = 0;
  while (length < bytes.size()) {
    const ssize_t got = ::read(fd, bytes.data() + length, bytes.size() - length);
    if (got < 0 && errno == EINTR) {
      continue;
    }
    if (got < 0) {
      found.refused = "cannot read: " + errno_text(errno);
      return found;
    }
    if (got == 0) {
      break;
    }
    length += static_cast<std::size_t>(got);
  }
  bytes.resize(length);
  std::variant<Policy, std::string> decoded = decode_policy_snapshot(bytes, key);
  if (decoded.index() == 1) {
    found.refused = std::get<1>(std::move(decoded));
    return found;
  }
  found.policy.emplace(std::get<0>(std::move(decoded)));
  return found;
}

std::string PolicySnapshotStore::publish(const Policy& policy, const SnapshotKey& key) const {
  const std::string bytes = encode_policy_snapshot(policy, key);
  if (bytes.size() > kMaxSnapshotBytes) {
    return "the compiled policy is larger than a compiled policy may be";
  }
  const std::string name = name_for(key);
  // Per process, so that processes publishing at once never write into one file; a leftover
  // of an earlier process of this pid is replaced.
  const std::string temporary = "." + name + "." + std::to_string(getpid());
  const int flags = O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC;
  int fd = ::openat(fd_, temporary.c_str(), flags, 0600);
  if (fd < 0 && errno == EEXIST && ::unlinkat(fd_, temporary.c_str(), 0) == 0) {
    fd = ::openat(fd_, temporary.c_str(), flags, 0600);
  }
  if (fd < 0) {
    return "cannot write " + directory_ + "/" + temporary + ": " + errno_text(errno);
  }
  bool written = write_all(fd, bytes);
  int error = errno;
  if (::close(fd) != 0 && written) {
    written = false;
    error = errno;
  }
  if (!written || ::renameat(fd_, temporary.c_str(), fd_, name.c_str()) != 0) {
    if (written) {
      error = errno;
    }
    (void)::unlinkat(fd_, temporary.c_str(), 0);
    return "cannot write " + directory_ + "/" + name + ": " + errno_text(error);
  }
  return {};
}

}  // namespace tcptune::config
