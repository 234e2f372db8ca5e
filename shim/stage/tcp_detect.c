#include "tcp_detect.h"

#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
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

/* The descriptors a process inherits sit low: stdin to stderr, systemd's from 3 on. Numbers
   from 64 up are found by the core's own scan when it loads for another reason. */
enum { kInheritedProbed = 64 };

bool stage_inherits_tcp_socket(void) {
  const int saved_errno = errno;
  /* One poll() tells which are open (the others answer POLLNVAL); only those are asked. */
  struct pollfd probed[kInheritedProbed];
  for (int fd = 0; fd < kInheritedProbed; ++fd) {
    probed[fd].fd = fd;
    probed[fd].events = 0;
    probed[fd].revents = 0;
  }
  const bool listed = syscall(SYS_poll, probed, (unsigned long)kInheritedProbed, 0) >= 0;
  bool found = false;
  for (int fd = 0; fd < kInheritedProbed && !found; ++fd) {
    /* Where poll fails (RLIMIT_NOFILE under 64), every number is asked. */
    found = (!listed || (probed[fd].revents & POLLNVAL) == 0) && stage_fd_is_tcp(fd);
  }
  errno = saved_errno;
  return found;
}
