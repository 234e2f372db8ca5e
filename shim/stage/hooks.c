/* libtcptune.so's exported libc functions, every one of hook_table.def and nothing else. Each is
   one load of its route and a call (routes.h): libc's next definition until the process has a
   TCP socket, then the tuning core's entry, which does what the hook does today around the next
   definition. errno is what the call sets; no locks, no allocation. */
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

#include "core_interface.h"
#include "routes.h"

#define TCPTUNE_HOOK __attribute__((visibility("default")))

TCPTUNE_HOOK int socket(int domain, int type, int protocol) {
  return STAGE_ROUTE(socket)(domain, type, protocol);
}

TCPTUNE_HOOK int connect(int fd, __CONST_SOCKADDR_ARG address, socklen_t length) {
  return STAGE_ROUTE(connect)(fd, address, length);
}

TCPTUNE_HOOK int listen(int fd, int backlog) {
  return STAGE_ROUTE(listen)(fd, backlog);
}

TCPTUNE_HOOK int accept(int fd, __SOCKADDR_ARG address, socklen_t* length) {
  return STAGE_ROUTE(accept)(fd, address, length);
}

TCPTUNE_HOOK int accept4(int fd, __SOCKADDR_ARG address, socklen_t* length, int flags) {
  return STAGE_ROUTE(accept4)(fd, address, length, flags);
}

TCPTUNE_HOOK int setsockopt(int fd, int level, int name, const void* value, socklen_t length) {
  return STAGE_ROUTE(setsockopt)(fd, level, name, value, length);
}

TCPTUNE_HOOK int getsockopt(int fd, int level, int name, void* value, socklen_t* length) {
  return STAGE_ROUTE(getsockopt)(fd, level, name, value, length);
}

TCPTUNE_HOOK ssize_t write(int fd, const void* buffer, size_t count) {
  return STAGE_ROUTE(write)(fd, buffer, count);
}

TCPTUNE_HOOK ssize_t send(int fd, const void* buffer, size_t count, int flags) {
  return STAGE_ROUTE(send)(fd, buffer, count, flags);
}

TCPTUNE_HOOK ssize_t sendto(int fd, const void* buffer, size_t count, int flags, __CONST_SOCKADDR_ARG address,
                            socklen_t length) {
  return STAGE_ROUTE(sendto)(fd, buffer, count, flags, address, length);
}

TCPTUNE_HOOK ssize_t sendmsg(int fd, const struct msghdr* message, int flags) {
  return STAGE_ROUTE(sendmsg)(fd, message, flags);
}

TCPTUNE_HOOK int sendmmsg(int fd, struct mmsghdr* messages, unsigned int count, int flags) {
  return STAGE_ROUTE(sendmmsg)(fd, messages, count, flags);
}

TCPTUNE_HOOK ssize_t writev(int fd, const struct iovec* iov, int count) {
  return STAGE_ROUTE(writev)(fd, iov, count);
}

TCPTUNE_HOOK ssize_t sendfile(int out_fd, int in_fd, off_t* offset, size_t count) {
  return STAGE_ROUTE(sendfile)(out_fd, in_fd, offset, count);
}

TCPTUNE_HOOK ssize_t sendfile64(int out_fd, int in_fd, off64_t* offset, size_t count) {
  return STAGE_ROUTE(sendfile64)(out_fd, in_fd, offset, count);
}

TCPTUNE_HOOK ssize_t splice(int in_fd, loff_t* in_offset, int out_fd, loff_t* out_offset, size_t count,
                            unsigned int flags) {
  return STAGE_ROUTE(splice)(in_fd, in_offset, out_fd, out_offset, count, flags);
}

TCPTUNE_HOOK ssize_t read(int fd, void* buffer, size_t count) {
  return STAGE_ROUTE(read)(fd, buffer, count);
}

TCPTUNE_HOOK ssize_t recv(int fd, void* buffer, size_t count, int flags) {
  return STAGE_ROUTE(recv)(fd, buffer, count, flags);
}

TCPTUNE_HOOK ssize_t recvfrom(int fd, void* buffer, size_t count, int flags, __SOCKADDR_ARG address,
                              socklen_t* length) {
  return STAGE_ROUTE(recvfrom)(fd, buffer, count, flags, address, length);
}

TCPTUNE_HOOK ssize_t recvmsg(int fd, struct msghdr* message, int flags) {
  return STAGE_ROUTE(recvmsg)(fd, message, flags);
}

TCPTUNE_HOOK ssize_t readv(int fd, const struct iovec* iov, int count) {
  return STAGE_ROUTE(readv)(fd, iov, count);
}

TCPTUNE_HOOK int poll(struct pollfd* fds, nfds_t count, int timeout) {
  return STAGE_ROUTE(poll)(fds, count, timeout);
}

TCPTUNE_HOOK int ppoll(struct pollfd* fds, nfds_t count, const struct timespec* timeout, const sigset_t* mask) {
  return STAGE_ROUTE(ppoll)(fds, count, timeout, mask);
}

TCPTUNE_HOOK int select(int count, fd_set* reads, fd_set* writes, fd_set* errors, struct timeval* timeout) {
  return STAGE_ROUTE(select)(count, reads, writes, errors, timeout);
}

TCPTUNE_HOOK int pselect(int count, fd_set* reads, fd_set* writes, fd_set* errors, const struct timespec* timeout,
                         const sigset_t* mask) {
  return STAGE_ROUTE(pselect)(count, reads, writes, errors, timeout, mask);
}

TCPTUNE_HOOK int epoll_wait(int epoll_fd, struct epoll_event* events, int max_events, int timeout) {
  return STAGE_ROUTE(epoll_wait)(epoll_fd, events, max_events, timeout);
}

TCPTUNE_HOOK int epoll_pwait(int epoll_fd, struct epoll_event* events, int max_events, int timeout,
                             const sigset_t* mask) {
  return STAGE_ROUTE(epoll_pwait)(epoll_fd, events, max_events, timeout, mask);
}

TCPTUNE_HOOK int epoll_pwait2(int epoll_fd, struct epoll_event* events, int max_events, const struct timespec* timeout,
                              const sigset_t* mask) {
  return STAGE_ROUTE(epoll_pwait2)(epoll_fd, events, max_events, timeout, mask);
}

TCPTUNE_HOOK ssize_t __read_chk(int fd, void* buffer, size_t count, size_t buffer_length) {
  return STAGE_ROUTE(__read_chk)(fd, buffer, count, buffer_length);
}

TCPTUNE_HOOK ssize_t __recv_chk(int fd, void* buffer, size_t count, size_t buffer_length, int flags) {
  return STAGE_ROUTE(__recv_chk)(fd, buffer, count, buffer_length, flags);
}

TCPTUNE_HOOK ssize_t __recvfrom_chk(int fd, void* buffer, size_t count, size_t buffer_length, int flags,
                                    struct sockaddr* address, socklen_t* length) {
  return STAGE_ROUTE(__recvfrom_chk)(fd, buffer, count, buffer_length, flags, address, length);
}

TCPTUNE_HOOK int __poll_chk(struct pollfd* fds, nfds_t count, int timeout, size_t fds_length) {
  return STAGE_ROUTE(__poll_chk)(fds, count, timeout, fds_length);
}

TCPTUNE_HOOK int __ppoll_chk(struct pollfd* fds, nfds_t count, const struct timespec* timeout, const sigset_t* mask,
                             size_t fds_length) {
  return STAGE_ROUTE(__ppoll_chk)(fds, count, timeout, mask, fds_length);
}

TCPTUNE_HOOK int close(int fd) {
  return STAGE_ROUTE(close)(fd);
}

TCPTUNE_HOOK int close_range(unsigned int first, unsigned int last, int flags) {
  return STAGE_ROUTE(close_range)(first, last, flags);
}

TCPTUNE_HOOK void closefrom(int lowest) {
  STAGE_ROUTE(closefrom)(lowest);
}

TCPTUNE_HOOK int dup(int fd) {
  return STAGE_ROUTE(dup)(fd);
}

TCPTUNE_HOOK int dup2(int fd, int target) {
  return STAGE_ROUTE(dup2)(fd, target);
}

TCPTUNE_HOOK int dup3(int fd, int target, int flags) {
  return STAGE_ROUTE(dup3)(fd, target, flags);
}

TCPTUNE_HOOK int fclose(FILE* stream) {
  return STAGE_ROUTE(fclose)(stream);
}

TCPTUNE_HOOK FILE* fdopen(int fd, const char* mode) {
  return STAGE_ROUTE(fdopen)(fd, mode);
}

TCPTUNE_HOOK int sigaction(int signal_number, const struct sigaction* action, struct sigaction* old) {
  return STAGE_ROUTE(sigaction)(signal_number, action, old);
}

TCPTUNE_HOOK sighandler_t signal(int signal_number, sighandler_t handler) {
  return STAGE_ROUTE(signal)(signal_number, handler);
}

TCPTUNE_HOOK int posix_spawn(pid_t* pid, const char* path, const posix_spawn_file_actions_t* actions,
                             const posix_spawnattr_t* attributes, char* const argv[], char* const envp[]) {
  return STAGE_ROUTE(posix_spawn)(pid, path, actions, attributes, argv, envp);
}

TCPTUNE_HOOK int posix_spawnp(pid_t* pid, const char* file, const posix_spawn_file_actions_t* actions,
                              const posix_spawnattr_t* attributes, char* const argv[], char* const envp[]) {
  return STAGE_ROUTE(posix_spawnp)(pid, file, actions, attributes, argv, envp);
}

TCPTUNE_HOOK pid_t _Fork(void) {
  return STAGE_ROUTE(_Fork)();
}

TCPTUNE_HOOK void _exit(int status) {
  STAGE_ROUTE(_exit)(status);
  __builtin_unreachable();  // the next _exit (or its fallback, exit_group) ends the process
}

TCPTUNE_HOOK void _Exit(int status) {
  _exit(status);
}

TCPTUNE_HOOK int system(const char* command) {
  return STAGE_ROUTE(system)(command);
}

TCPTUNE_HOOK FILE* popen(const char* command, const char* type) {
  return STAGE_ROUTE(popen)(command, type);
}

TCPTUNE_HOOK int vdprintf(int fd, const char* format, va_list arguments) {
  return STAGE_ROUTE(vdprintf)(fd, format, arguments);
}

TCPTUNE_HOOK int __vdprintf_chk(int fd, int flag, const char* format, va_list arguments) {
  return STAGE_ROUTE(__vdprintf_chk)(fd, flag, format, arguments);
}

TCPTUNE_HOOK ssize_t pwritev2(int fd, const struct iovec* iov, int count, off_t offset, int flags) {
  return STAGE_ROUTE(pwritev2)(fd, iov, count, offset, flags);
}

TCPTUNE_HOOK ssize_t pwritev64v2(int fd, const struct iovec* iov, int count, off64_t offset, int flags) {
  return STAGE_ROUTE(pwritev64v2)(fd, iov, count, offset, flags);
}

TCPTUNE_HOOK int aio_write(struct aiocb* request) {
  return STAGE_ROUTE(aio_write)(request);
}

TCPTUNE_HOOK int aio_write64(struct aiocb64* request) {
  return STAGE_ROUTE(aio_write64)(request);
}

TCPTUNE_HOOK int execve(const char* path, char* const argv[], char* const envp[]) {
  return STAGE_ROUTE(execve)(path, argv, envp);
}

TCPTUNE_HOOK int execvpe(const char* file, char* const argv[], char* const envp[]) {
  return STAGE_ROUTE(execvpe)(file, argv, envp);
}

TCPTUNE_HOOK int fexecve(int fd, char* const argv[], char* const envp[]) {
  return STAGE_ROUTE(fexecve)(fd, argv, envp);
}

TCPTUNE_HOOK int execveat(int dirfd, const char* path, char* const argv[], char* const envp[], int flags) {
  return STAGE_ROUTE(execveat)(dirfd, path, argv, envp, flags);
}

/* fcntl's third argument is an int, a long or a pointer depending on the command; on this ABI
   each travels in one register, so it is passed on as an unsigned long. */
TCPTUNE_HOOK int fcntl(int fd, int command, ...) {
  va_list arguments;
  va_start(arguments, command);
  const unsigned long argument = va_arg(arguments, unsigned long);
  va_end(arguments);
  return STAGE_ROUTE(fcntl)(fd, command, argument);
}

TCPTUNE_HOOK int fcntl64(int fd, int command, ...) {
  va_list arguments;
  va_start(arguments, command);
  const unsigned long argument = va_arg(arguments, unsigned long);
  va_end(arguments);
  return STAGE_ROUTE(fcntl64)(fd, command, argument);
}

/* The table's VIA hooks: through the route of the function they forward to. */

/* As glibc's and musl's: the caller's environment. */
TCPTUNE_HOOK int execv(const char* path, char* const argv[]) {
  return STAGE_ROUTE(execve)(path, argv, environ);
}

TCPTUNE_HOOK int execvp(const char* file, char* const argv[]) {
  return STAGE_ROUTE(execvpe)(file, argv, environ);
}

/* execl, execlp and execle: the list from `first` to its NULL in an array on the stack, as
   glibc builds it, then execle's environment, which follows the NULL. */
static int exec_list(const char* target, bool search, const char* first, va_list arguments, bool environment) {
  va_list counting;
  va_copy(counting, arguments);
  size_t count = 1; /* the NULL */
  for (const char* argument = first; argument != NULL; argument = va_arg(counting, const char*)) {
    ++count;
  }
  va_end(counting);
  const char* argv[count];
  argv[0] = first;
  for (size_t i = 1; i < count; ++i) {
    argv[i] = va_arg(arguments, const char*);
  }
  char* const* envp = environment ? va_arg(arguments, char* const*) : environ;
  return search ? STAGE_ROUTE(execvpe)(target, (char* const*)argv, envp)
                : STAGE_ROUTE(execve)(target, (char* const*)argv, envp);
}

TCPTUNE_HOOK int execl(const char* path, const char* first, ...) {
  va_list arguments;
  va_start(arguments, first);
  const int result = exec_list(path, false, first, arguments, false);
  va_end(arguments);
  return result;
}

TCPTUNE_HOOK int execlp(const char* file, const char* first, ...) {
  va_list arguments;
  va_start(arguments, first);
  const int result = exec_list(file, true, first, arguments, false);
  va_end(arguments);
  return result;
}

TCPTUNE_HOOK int execle(const char* path, const char* first, ...) {
  va_list arguments;
  va_start(arguments, first);
  const int result = exec_list(path, false, first, arguments, true);
  va_end(arguments);
  return result;
}

TCPTUNE_HOOK int dprintf(int fd, const char* format, ...) {
  va_list arguments;
  va_start(arguments, format);
  const int result = STAGE_ROUTE(vdprintf)(fd, format, arguments);
  va_end(arguments);
  return result;
}

TCPTUNE_HOOK int __dprintf_chk(int fd, int flag, const char* format, ...) {
  va_list arguments;
  va_start(arguments, format);
  const int result = STAGE_ROUTE(__vdprintf_chk)(fd, flag, format, arguments);
  va_end(arguments);
  return result;
}
