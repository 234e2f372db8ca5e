/* glibc's fortified variants of hooked functions, which its headers declare only under
   _FORTIFY_SOURCE; libc's names and prototypes. Included from C (the first stage) and C++. */
#ifndef TCPTUNE_FORTIFIED_DECLARATIONS_H
#define TCPTUNE_FORTIFIED_DECLARATIONS_H

#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <time.h>

#ifdef __cplusplus
extern "C" {
#endif
/* NOLINTBEGIN(readability-identifier-naming) */
int __vdprintf_chk(int fd, int flag, const char* format, va_list args);
int __dprintf_chk(int fd, int flag, const char* format, ...);
ssize_t __read_chk(int fd, void* buf, size_t count, size_t buflen);
ssize_t __recv_chk(int fd, void* buf, size_t count, size_t buflen, int flags);
ssize_t __recvfrom_chk(int fd, void* buf, size_t count, size_t buflen, int flags, struct sockaddr* addr,
                       socklen_t* len);
int __poll_chk(struct pollfd* fds, nfds_t count, int timeout, size_t fdslen);
int __ppoll_chk(struct pollfd* fds, nfds_t count, const struct timespec* timeout, const sigset_t* mask, size_t fdslen);
/* NOLINTEND(readability-identifier-naming) */
#ifdef __cplusplus
}
#endif

#endif
