/* The first stage's fallbacks (next_fallbacks.h), the same as the core's in
   shim/next/next_symbols.cpp, in C: raw system calls, ENOSYS where there is none. */
#include "next_fallbacks.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <sys/syscall.h>
#include <unistd.h>

/* glibc passes socket addresses as transparent unions (__SOCKADDR_ARG): .__sockaddr__ is the pointer. */
static long arg_pointer(const void* pointer) {
  return (long)pointer;
}

int raw_socket(int domain, int type, int protocol) {
  return (int)syscall(SYS_socket, domain, type, protocol);
}
int raw_connect(int fd, __CONST_SOCKADDR_ARG address, socklen_t length) {
  return (int)syscall(SYS_connect, fd, arg_pointer(address.__sockaddr__), length);
}
int raw_listen(int fd, int backlog) {
  return (int)syscall(SYS_listen, fd, backlog);
}
int raw_accept4(int fd, __SOCKADDR_ARG address, socklen_t* length, int flags) {
  return (int)syscall(SYS_accept4, fd, arg_pointer(address.__sockaddr__), arg_pointer(length), flags);
}
int raw_accept(int fd, __SOCKADDR_ARG address, socklen_t* length) {
  return raw_accept4(fd, address, length, 0);
}
int raw_setsockopt(int fd, int level, int name, const void* value, socklen_t length) {
  return (int)syscall(SYS_setsockopt, fd, level, name, arg_pointer(value), length);
}
int raw_getsockopt(int fd, int level, int name, void* value, socklen_t* length) {
  return (int)syscall(SYS_getsockopt, fd, level, name, arg_pointer(value), arg_pointer(length));
}
ssize_t raw_write(int fd, const void* buffer, size_t count) {
  return syscall(SYS_write, fd, arg_pointer(buffer), count);
}
static ssize_t sendto_call(int fd, const void* buffer, size_t count, int flags, const void* address, socklen_t length) {
  return syscall(SYS_sendto, fd, arg_pointer(buffer), count, flags, arg_pointer(address), length);
}
ssize_t raw_sendto(int fd, const void* buffer, size_t count, int flags, __CONST_SOCKADDR_ARG address,
                   socklen_t length) {
  return sendto_call(fd, buffer, count, flags, address.__sockaddr__, length);
}
ssize_t raw_send(int fd, const void* buffer, size_t count, int flags) {
  return sendto_call(fd, buffer, count, flags, NULL, 0);
}
ssize_t raw_sendmsg(int fd, const struct msghdr* message, int flags) {
  return syscall(SYS_sendmsg, fd, arg_pointer(message), flags);
}
int raw_sendmmsg(int fd, struct mmsghdr* messages, unsigned int count, int flags) {
  return (int)syscall(SYS_sendmmsg, fd, arg_pointer(messages), count, flags);
}
ssize_t raw_writev(int fd, const struct iovec* iov, int count) {
  return syscall(SYS_writev, fd, arg_pointer(iov), count);
}
/* The offset in two longs, the high one unused on a 64-bit ABI (the kernel's pos_from_hilo). */
ssize_t raw_pwritev2(int fd, const struct iovec* iov, int count, off_t offset, int flags) {
  return syscall(SYS_pwritev2, fd, arg_pointer(iov), count, offset, 0, flags);
}
ssize_t raw_sendfile(int out, int in, off_t* offset, size_t count) {
  return syscall(SYS_sendfile, out, in, arg_pointer(offset), count);
}
ssize_t raw_splice(int in, loff_t* in_offset, int out, loff_t* out_offset, size_t count, unsigned int flags) {
  return syscall(SYS_splice, in, arg_pointer(in_offset), out, arg_pointer(out_offset), count, flags);
}
ssize_t raw_read(int fd, void* buffer, size_t count) {
  return syscall(SYS_read, fd, arg_pointer(buffer), count);
}
static ssize_t recvfrom_call(int fd, void* buffer, size_t count, int flags, void* address, socklen_t* length) {
  return syscall(SYS_recvfrom, fd, arg_pointer(buffer), count, flags, arg_pointer(address), arg_pointer(length));
}
ssize_t raw_recvfrom(int fd, void* buffer, size_t count, int flags, __SOCKADDR_ARG address, socklen_t* length) {
  return recvfrom_call(fd, buffer, count, flags, address.__sockaddr__, length);
}
ssize_t raw_recv(int fd, void* buffer, size_t count, int flags) {
  return recvfrom_call(fd, buffer, count, flags, NULL, NULL);
}
ssize_t raw_recvmsg(int fd, struct msghdr* message, int flags) {
  return syscall(SYS_recvmsg, fd, arg_pointer(message), flags);
}
ssize_t raw_readv(int fd, const struct iovec* iov, int count) {
  return syscall(SYS_readv, fd, arg_pointer(iov), count);
}

/* The waits. The kernel's ppoll and pselect6 write the time left into their timespec, which
   libc's callers pass as const: each gets a copy. */
enum { kSigsetBytes = _NSIG / 8 };

int raw_ppoll(struct pollfd* fds, nfds_t count, const struct timespec* timeout, const sigset_t* mask) {
  struct timespec left = {0, 0};
  if (timeout != NULL) {
    left = *timeout;
  }
  return (int)syscall(SYS_ppoll, arg_pointer(fds), count, timeout != NULL ? arg_pointer(&left) : 0, arg_pointer(mask),
                      kSigsetBytes);
}
int raw_poll(struct pollfd* fds, nfds_t count, int timeout_ms) {
  const struct timespec timeout = {timeout_ms / 1000, (timeout_ms % 1000) * 1000000L};
  return raw_ppoll(fds, count, timeout_ms < 0 ? NULL : &timeout, NULL);
}
int raw_pselect(int count, fd_set* reads, fd_set* writes, fd_set* errors, const struct timespec* timeout,
                const sigset_t* mask) {
  struct timespec left = {0, 0};
  if (timeout != NULL) {
    left = *timeout;
  }
  const long mask_data[2] = {arg_pointer(mask), kSigsetBytes};
  return (int)syscall(SYS_pselect6, count, arg_pointer(reads), arg_pointer(writes), arg_pointer(errors),
                      timeout != NULL ? arg_pointer(&left) : 0, arg_pointer(&mask_data[0]));
}
/* select() reports the time left in `timeout`, as Linux's does. */
int raw_select(int count, fd_set* reads, fd_set* writes, fd_set* errors, struct timeval* timeout) {
  struct timespec left = {0, 0};
  if (timeout != NULL) {
    left.tv_sec = timeout->tv_sec;
    left.tv_nsec = timeout->tv_usec * 1000L;
  }
  const long mask_data[2] = {0, kSigsetBytes};
  const int result = (int)syscall(SYS_pselect6, count, arg_pointer(reads), arg_pointer(writes), arg_pointer(errors),
                                  timeout != NULL ? arg_pointer(&left) : 0, arg_pointer(&mask_data[0]));
  if (timeout != NULL) {
    timeout->tv_sec = left.tv_sec;
    timeout->tv_usec = left.tv_nsec / 1000L;
  }
  return result;
}
int raw_epoll_pwait(int epoll_fd, struct epoll_event* events, int max_events, int timeout_ms, const sigset_t* mask) {
  return (int)syscall(SYS_epoll_pwait, epoll_fd, arg_pointer(events), max_events, timeout_ms, arg_pointer(mask),
                      kSigsetBytes);
}
int raw_epoll_wait(int epoll_fd, struct epoll_event* events, int max_events, int timeout_ms) {
  return raw_epoll_pwait(epoll_fd, events, max_events, timeout_ms, NULL);
}
int raw_epoll_pwait2(int epoll_fd, struct epoll_event* events, int max_events, const struct timespec* timeout,
                     const sigset_t* mask) {
  return (int)syscall(SYS_epoll_pwait2, epoll_fd, arg_pointer(events), max_events, arg_pointer(timeout),
                      arg_pointer(mask), kSigsetBytes);
}

/* The fortified variants' fallbacks skip the buffer check: used only when libc has none. */
ssize_t raw_read_chk(int fd, void* buffer, size_t count, size_t buffer_length) {
  (void)buffer_length;
  return raw_read(fd, buffer, count);
}
ssize_t raw_recv_chk(int fd, void* buffer, size_t count, size_t buffer_length, int flags) {
  (void)buffer_length;
  return raw_recv(fd, buffer, count, flags);
}
ssize_t raw_recvfrom_chk(int fd, void* buffer, size_t count, size_t buffer_length, int flags, struct sockaddr* address,
                         socklen_t* length) {
  (void)buffer_length;
  return recvfrom_call(fd, buffer, count, flags, address, length);
}
int raw_poll_chk(struct pollfd* fds, nfds_t count, int timeout_ms, size_t fds_length) {
  (void)fds_length;
  return raw_poll(fds, count, timeout_ms);
}
int raw_ppoll_chk(struct pollfd* fds, nfds_t count, const struct timespec* timeout, const sigset_t* mask,
                  size_t fds_length) {
  (void)fds_length;
  return raw_ppoll(fds, count, timeout, mask);
}

int raw_close(int fd) {
  return (int)syscall(SYS_close, fd);
}
int raw_close_range(unsigned int first, unsigned int last, int flags) {
  return (int)syscall(SYS_close_range, first, last, flags);
}
void raw_closefrom(int lowest) {
  (void)raw_close_range((unsigned int)lowest, ~0U, 0);
}
int raw_dup(int fd) {
  return (int)syscall(SYS_dup, fd);
}
int raw_dup2(int fd, int target) {
  return (int)syscall(SYS_dup2, fd, target);
}
int raw_dup3(int fd, int target, int flags) {
  return (int)syscall(SYS_dup3, fd, target, flags);
}
int raw_fcntl(int fd, int command, ...) {
  va_list arguments;
  va_start(arguments, command);
  const unsigned long value = va_arg(arguments, unsigned long);
  va_end(arguments);
  return (int)syscall(SYS_fcntl, fd, command, value);
}

/* The exec family: fexecve is execveat of the descriptor itself. */
int raw_execve(const char* path, char* const argv[], char* const envp[]) {
  return (int)syscall(SYS_execve, arg_pointer(path), arg_pointer(argv), arg_pointer(envp));
}
int raw_execveat(int dirfd, const char* path, char* const argv[], char* const envp[], int flags) {
  return (int)syscall(SYS_execveat, dirfd, arg_pointer(path), arg_pointer(argv), arg_pointer(envp), flags);
}
int raw_fexecve(int fd, char* const argv[], char* const envp[]) {
  return raw_execveat(fd, "", argv, envp, AT_EMPTY_PATH);
}
void raw_exit(int status) {
  for (;;) {
    (void)syscall(SYS_exit_group, status);
  }
}

/* No system call stands in for these: every libc the stage loads into has them. */
int unresolved_fclose(FILE* stream) {
  (void)stream;
  errno = ENOSYS;
  return EOF;
}
FILE* unresolved_fdopen(int fd, const char* mode) {
  (void)fd;
  (void)mode;
  errno = ENOSYS;
  return NULL;
}
int unresolved_sigaction(int signal_number, const struct sigaction* action, struct sigaction* old) {
  (void)signal_number;
  (void)action;
  (void)old;
  errno = ENOSYS;
  return -1;
}
sighandler_t unresolved_signal(int signal_number, sighandler_t handler) {
  (void)signal_number;
  (void)handler;
  errno = ENOSYS;
  return SIG_ERR;
}
int unresolved_posix_spawn(pid_t* pid, const char* path, const posix_spawn_file_actions_t* actions,
                           const posix_spawnattr_t* attributes, char* const argv[], char* const envp[]) {
  (void)pid;
  (void)path;
  (void)actions;
  (void)attributes;
  (void)argv;
  (void)envp;
  return ENOSYS;
}
pid_t unresolved_fork(void) {
  errno = ENOSYS;
  return -1;
}
int unresolved_system(const char* command) {
  (void)command;
  errno = ENOSYS;
  return -1;
}
FILE* unresolved_popen(const char* command, const char* type) {
  (void)command;
  (void)type;
  errno = ENOSYS;
  return NULL;
}
int unresolved_vdprintf(int fd, const char* format, va_list arguments) {
  (void)fd;
  (void)format;
  (void)arguments;
  errno = ENOSYS;
  return -1;
}
int unresolved_vdprintf_chk(int fd, int flag, const char* format, va_list arguments) {
  (void)fd;
  (void)flag;
  (void)format;
  (void)arguments;
  errno = ENOSYS;
  return -1;
}
int unresolved_execvpe(const char* file, char* const argv[], char* const envp[]) {
  (void)file;
  (void)argv;
  (void)envp;
  errno = ENOSYS;
  return -1;
}
int unresolved_aio_write(struct aiocb* request) {
  (void)request;
  errno = ENOSYS;
  return -1;
}
int unresolved_aio_write64(struct aiocb64* request) {
  (void)request;
  errno = ENOSYS;
  return -1;
}
