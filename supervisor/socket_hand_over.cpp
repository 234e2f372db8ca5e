#include "socket_hand_over.hpp"

#include <fcntl.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <optional>

#include "kernel_abi.hpp"

namespace tcptune::supervisor {

namespace {

// "net:[N]"; empty with errno when unreadable.
std::string network_namespace_of(const char* path) {
  char link[64];
  const ssize_t length = readlink(path, link, sizeof link);
  return length > 0 ? std::string(link, static_cast<std::size_t>(length)) : std::string();
}

struct FsIds {
  uid_t uid = 0;
  gid_t gid = 0;
};

// The fourth field (fs) of /proc/TID/status's "Uid:" and "Gid:" lines.
std::optional<FsIds> fs_ids_from_proc(pid_t thread) {
  char path[48];
  (void)std::snprintf(path, sizeof path, "/proc/%d/status", static_cast<int>(thread));
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return std::nullopt;
  }
  char text[4096];
  const ssize_t length = read(fd, text, sizeof text - 1);
  close(fd);
  if (length <= 0) {
    return std::nullopt;
  }
  text[length] = '\0';
  const auto fourth = [&text](const char* label) -> std::optional<unsigned long> {
    const char* line = std::strstr(text, label);
    unsigned long ids[4];
    if (line == nullptr ||
        std::sscanf(line + std::strlen(label), "%lu %lu %lu %lu", &ids[0], &ids[1], &ids[2], &ids[3]) != 4) {
      return std::nullopt;
    }
    return ids[3];
  };
  const std::optional<unsigned long> uid = fourth("\nUid:");
  const std::optional<unsigned long> gid = fourth("\nGid:");
  if (!uid.has_value() || !gid.has_value()) {
    return std::nullopt;
  }
  return FsIds{static_cast<uid_t>(*uid), static_cast<gid_t>(*gid)};
}

struct Credentials {
  std::optional<FsIds> ids;
  bool thread_verified = false;  // PIDFD_GET_INFO answered: the pidfd's thread is alive
  bool thread_gone = false;      // it answered ESRCH: the pidfd names a thread that has died
};

// PIDFD_GET_INFO (6.13+) where the kernel has it: one ioctl instead of a /proc file.
Credentials credentials(pid_t thread, int pidfd) {
  Credentials found;
  if (pidfd >= 0) {
    kernel::PidfdInfo info{};
    info.mask = kernel::kPidfdInfoCreds;
    if (ioctl(pidfd, kernel::kPidfdGetInfo, &info) == 0 && (info.mask & kernel::kPidfdInfoCreds) != 0) {
      found.ids = FsIds{info.fsuid, info.fsgid};
      found.thread_verified = true;
      return found;
    }
    if (errno == ESRCH) {
      found.thread_gone = true;
      return found;
    }
  }
  found.ids = fs_ids_from_proc(thread);
  return found;
}

}  // namespace

HandOverCheck::HandOverCheck()
    : network_namespace_(network_namespace_of("/proc/self/ns/net")), fsuid_(geteuid()), fsgid_(getegid()) {}

std::string HandOverCheck::obstacle(pid_t thread, int pidfd, std::string& key) {
  const Credentials found = credentials(thread, pidfd);
  if (found.thread_gone) {
    key = "thread_gone";
    forget(thread);
    return "its thread is gone";
  }
  const std::optional<FsIds>& ids = found.ids;
  if (!ids.has_value()) {
    key = "ids";
    return "its credentials cannot be read";
  }
  if (ids->uid != fsuid_ || ids->gid != fsgid_) {
    key = "ids";
    return "it runs as uid " + std::to_string(ids->uid) + " gid " + std::to_string(ids->gid) + ", tcptune as uid " +
           std::to_string(fsuid_) + " gid " + std::to_string(fsgid_) +
           ": a socket tcptune created would carry tcptune's ids (firewall owner matches, uid routing, SO_REUSEPORT "
           "groups); run tcptune as the program's user (after the switch: e.g. gosu USER tcptune run ...)";
  }
  if (found.thread_verified && same_namespace_.contains(thread)) {
    return {};
  }
  char path[48];
  (void)std::snprintf(path, sizeof path, "/proc/%d/ns/net", static_cast<int>(thread));
  const std::string theirs = network_namespace_of(path);
  if (theirs.empty() && (errno == EACCES || errno == EPERM)) {
    key = "not_dumpable";
    return "it may not be inspected by this user (it is not dumpable: an unreadable or setuid binary, or it made "
           "itself so with prctl(PR_SET_DUMPABLE)), so where it is cannot be checked";
  }
  if (theirs.empty() || theirs != network_namespace_) {
    key = "netns";
    return theirs.empty()
               ? "its network namespace cannot be read (" + std::string(path) + ")"
               : "it runs in another network namespace than tcptune (" + theirs + ", tcptune's " + network_namespace_ +
                     "): a socket tcptune created would be in tcptune's; run tcptune inside that namespace "
                     "(e.g. ip netns exec NAME tcptune run ...)";
  }
  if (found.thread_verified) {
    if (same_namespace_.size() >= kMostThreads) {
      same_namespace_.clear();
    }
    same_namespace_.insert(thread);
  }
  return {};
}

}  // namespace tcptune::supervisor
