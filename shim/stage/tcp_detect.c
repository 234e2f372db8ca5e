#include "tcp_detect.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

bool stage_socket_call_is_tcp(int domain, int type, int protocol) {
  const int base_type = type & ~(SOCK_NONBLOCK | SOCK_CLOEXEC);
  return (domain == AF_INET || domain == AF_INET6) && base_type == SOCK_STREAM &&
         (protocol == 0 || protocol == IPPROTO_TCP);
}

bool stage_fd_is_tcp(int fd) {
  const int saved_errno = errno;
  int protocol = 0;
  socklen_t length = sizeof protocol;
  const long result = syscall(SYS_getsockopt, fd, SOL_SOCKET, SO_PROTOCOL, &protocol, &length);
  errno = saved_errno;
  return result == 0 && protocol == IPPROTO_TCP;
}

/* Walked by hand: glibc's CMSG_NXTHDR may call __cmsg_nxthdr, which musl does not have. */
bool stage_rights_carry_tcp(const struct msghdr* message) {
  const unsigned char* control = message->msg_control;
  const size_t length = message->msg_controllen;
  if (control == NULL) {
    return false;
  }
  size_t offset = 0;
  while (length - offset >= sizeof(struct cmsghdr)) {
    struct cmsghdr header;
    memcpy(&header, control + offset, sizeof header);
    if (header.cmsg_len < CMSG_LEN(0) || header.cmsg_len > length - offset) {
      break;
    }
    if (header.cmsg_level == SOL_SOCKET && header.cmsg_type == SCM_RIGHTS) {
      const size_t count = (header.cmsg_len - CMSG_LEN(0)) / sizeof(int);
      for (size_t i = 0; i < count; ++i) {
        int fd = -1;
        memcpy(&fd, control + offset + CMSG_LEN(0) + i * sizeof(int), sizeof fd);
        if (stage_fd_is_tcp(fd)) {
          return true;
        }
      }
    }
    const size_t step = CMSG_ALIGN(header.cmsg_len);
    if (step == 0 || step > length - offset) {
      break;
    }
    offset += step;
  }
  return false;
}

/* The kernel's directory entry, as getdents64 returns it. */
struct linux_dirent64 {
  uint64_t d_ino;
  int64_t d_off;
  unsigned short d_reclen;
  unsigned char d_type;
  char d_name[];
};

/* Without /proc (a bare chroot): the descriptors a launcher passes on sit low. */
enum { kProbedWithoutProc = 64 };

static bool listed_fd_is_tcp(const char* name, long directory) {
  long fd = 0;
  if (*name == '\0') {
    return false;
  }
  for (; *name != '\0'; ++name) {
    if (*name < '0' || *name > '9' || fd > (1L << 30)) {
      return false; /* "." and ".." */
    }
    fd = fd * 10 + (*name - '0');
  }
  return fd != directory && stage_fd_is_tcp((int)fd);
}

bool stage_inherits_tcp_socket(void) {
  const int saved_errno = errno;
  bool found = false;
  const long directory = syscall(SYS_openat, AT_FDCWD, "/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (directory < 0) {
    for (int fd = 0; fd < kProbedWithoutProc && !found; ++fd) {
      found = stage_fd_is_tcp(fd);
    }
    errno = saved_errno;
    return found;
  }
  _Alignas(struct linux_dirent64) char buffer[2048];
  long filled = 0;
  while (!found && (filled = syscall(SYS_getdents64, directory, buffer, sizeof buffer)) > 0) {
    for (long offset = 0; offset < filled && !found;) {
      const struct linux_dirent64* entry = (const struct linux_dirent64*)(buffer + offset);
      found = listed_fd_is_tcp(entry->d_name, directory);
      offset += entry->d_reclen;
    }
  }
  (void)syscall(SYS_close, directory);
  errno = saved_errno;
  return found;
}
