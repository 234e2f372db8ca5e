#include "program_socket.hpp"

#include <sys/stat.h>
#include <sys/xattr.h>

#include <cstdio>
#include <cstring>

namespace tcptune::supervisor {

namespace {

struct FdPath {
  char text[48];
  FdPath(pid_t thread, int fd) noexcept {
    (void)std::snprintf(text, sizeof text, "/proc/%d/fd/%d", static_cast<int>(thread), fd);
  }
};

}  // namespace

std::uint64_t program_socket_inode(pid_t thread, int fd) noexcept {
  if (fd < 0) {
    return 0;
  }
  const FdPath path(thread, fd);
  struct stat status {};
  return stat(path.text, &status) == 0 && S_ISSOCK(status.st_mode) ? status.st_ino : 0;
}

bool program_fd_is_tcp(pid_t thread, int fd) noexcept {
  if (fd < 0) {
    return false;
  }
  const FdPath path(thread, fd);
  char name[16] = {};
  const ssize_t length = getxattr(path.text, "system.sockprotoname", name, sizeof name - 1);
  return length > 0 && (std::strcmp(name, "TCP") == 0 || std::strcmp(name, "TCPv6") == 0);
}

}  // namespace tcptune::supervisor
