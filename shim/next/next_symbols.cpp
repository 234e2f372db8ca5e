#include "next_symbols.hpp"

#include <fcntl.h>
#include <sys/sendfile.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdarg>
#include <type_traits>

namespace tcptune::shim {

namespace {

// Raw system calls, used only when dlsym cannot find the next definition.
long sys(long number, long a = 0, long b = 0, long c = 0, long d = 0, long e = 0, long f = 0) {
  return syscall(number, a, b, c, d, e, f);
}
template <typename T>
long arg(T value) {
  if constexpr (std::is_pointer_v<T>) {
    return reinterpret_cast<long>(value);
  } else {
    return static_cast<long>(value);
  }
}

int raw_socket(int d, int t, int p) {
  return static_cast<int>(sys(SYS_socket, d, t, p));
}
int raw_connect(int fd, const sockaddr* a, socklen_t l) {
  return static_cast<int>(sys(SYS_connect, fd, arg(a), l));
}
int raw_listen(int fd, int backlog) {
  return static_cast<int>(sys(SYS_listen, fd, backlog));
}
int raw_accept4(int fd, sockaddr* a, socklen_t* l, int flags) {
  return static_cast<int>(sys(SYS_accept4, fd, arg(a), arg(l), flags));
}
int raw_accept(int fd, sockaddr* a, socklen_t* l) {
  return raw_accept4(fd, a, l, 0);
}
int raw_setsockopt(int fd, int level, int name, const void* v, socklen_t l) {
  return static_cast<int>(sys(SYS_setsockopt, fd, level, name, arg(v), l));
}
int raw_getsockopt(int fd, int level, int name, void* v, socklen_t* l) {
  return static_cast<int>(sys(SYS_getsockopt, fd, level, name, arg(v), arg(l)));
}
ssize_t raw_write(int fd, const void* b, size_t n) {
  return sys(SYS_write, fd, arg(b), arg(n));
}
ssize_t raw_sendto(int fd, const void* b, size_t n, int flags, const sockaddr* a, socklen_t l) {
  return sys(SYS_sendto, fd, arg(b), arg(n), flags, arg(a), l);
}
ssize_t raw_send(int fd, const void* b, size_t n, int flags) {
  return raw_sendto(fd, b, n, flags, nullptr, 0);
}
ssize_t raw_sendmsg(int fd, const msghdr* m, int flags) {
  return sys(SYS_sendmsg, fd, arg(m), flags);
}
int raw_sendmmsg(int fd, mmsghdr* m, unsigned int n, int flags) {
  return static_cast<int>(sys(SYS_sendmmsg, fd, arg(m), n, flags));
}
ssize_t raw_writev(int fd, const iovec* v, int n) {
  return sys(SYS_writev, fd, arg(v), n);
}
// The offset in two longs, the high one unused on a 64-bit ABI (the kernel's pos_from_hilo).
ssize_t raw_pwritev2(int fd, const iovec* v, int n, off_t offset, int flags) {
  return sys(SYS_pwritev2, fd, arg(v), n, offset, 0, flags);
}
ssize_t raw_sendfile(int out, int in, off_t* off, size_t n) {
  return sys(SYS_sendfile, out, in, arg(off), arg(n));
}
ssize_t raw_splice(int in, loff_t* in_offset, int out, loff_t* out_offset, size_t n, unsigned int flags) {
  return sys(SYS_splice, in, arg(in_offset), out, arg(out_offset), arg(n), flags);
}
ssize_t raw_read(int fd, void* b, size_t n) {
  return sys(SYS_read, fd, arg(b), arg(n));
}
ssize_t raw_recvfrom(int fd, void* b, size_t n, int flags, sockaddr* a, socklen_t* l) {
  return sys(SYS_recvfrom, fd, arg(b), arg(n), flags, arg(a), arg(l));
}
ssize_t raw_recv(int fd, void* b, size_t n, int flags) {
  return raw_recvfrom(fd, b, n, flags, nullptr, nullptr);
}
ssize_t raw_recvmsg(int fd, msghdr* m, int flags) {
  return sys(SYS_recvmsg, fd, arg(m), flags);
}
ssize_t raw_readv(int fd, const iovec* v, int n) {
  return sys(SYS_readv, fd, arg(v), n);
}
// The waits. The kernel's ppoll and pselect6 write the time left into their timespec, which
// libc's callers pass as const: each gets a copy.
constexpr long kSigsetBytes = _NSIG / 8;
int raw_ppoll(pollfd* fds, nfds_t count, const timespec* timeout, const sigset_t* mask) {
  timespec left{};
  if (timeout != nullptr) {
    left = *timeout;
  }
  return static_cast<int>(
      sys(SYS_ppoll, arg(fds), arg(count), timeout != nullptr ? arg(&left) : 0, arg(mask), kSigsetBytes));
}
int raw_poll(pollfd* fds, nfds_t count, int timeout_ms) {
  const timespec timeout{timeout_ms / 1000, (timeout_ms % 1000) * 1000000L};
  return raw_ppoll(fds, count, timeout_ms < 0 ? nullptr : &timeout, nullptr);
}
int raw_pselect(int count, fd_set* reads, fd_set* writes, fd_set* errors, const timespec* timeout,
                const sigset_t* mask) {
  timespec left{};
  if (timeout != nullptr) {
    left = *timeout;
  }
  const long mask_data[2] = {arg(mask), kSigsetBytes};
  return static_cast<int>(sys(SYS_pselect6, count, arg(reads), arg(writes), arg(errors),
                              timeout != nullptr ? arg(&left) : 0, arg(&mask_data[0])));
}
// select() reports the time left in `timeout`, as Linux's does.
int raw_select(int count, fd_set* reads, fd_set* writes, fd_set* errors, timeval* timeout) {
  timespec left{};
  if (timeout != nullptr) {
    left = {timeout->tv_sec, timeout->tv_usec * 1000L};
  }
  const long mask_data[2] = {0, kSigsetBytes};
  const int result = static_cast<int>(sys(SYS_pselect6, count, arg(reads), arg(writes), arg(errors),
                                          timeout != nullptr ? arg(&left) : 0, arg(&mask_data[0])));
  if (timeout != nullptr) {
    *timeout = {left.tv_sec, left.tv_nsec / 1000L};
  }
  return result;
}
int raw_epoll_pwait(int epoll_fd, epoll_event* events, int max_events, int timeout_ms, const sigset_t* mask) {
  return static_cast<int>(sys(SYS_epoll_pwait, epoll_fd, arg(events), max_events, timeout_ms, arg(mask), kSigsetBytes));
}
int raw_epoll_wait(int epoll_fd, epoll_event* events, int max_events, int timeout_ms) {
  return raw_epoll_pwait(epoll_fd, events, max_events, timeout_ms, nullptr);
}
int raw_epoll_pwait2(int epoll_fd, epoll_event* events, int max_events, const timespec* timeout, const sigset_t* mask) {
  return static_cast<int>(
      sys(SYS_epoll_pwait2, epoll_fd, arg(events), max_events, arg(timeout), arg(mask), kSigsetBytes));
}
// The fortified variants' fallbacks skip the buffer check: they are used only when dlsym
// cannot find libc's.
ssize_t raw_read_chk(int fd, void* b, size_t n, size_t /*buflen*/) {
  return raw_read(fd, b, n);
}
ssize_t raw_recv_chk(int fd, void* b, size_t n, size_t /*buflen*/, int flags) {
  return raw_recv(fd, b, n, flags);
}
ssize_t raw_recvfrom_chk(int fd, void* b, size_t n, size_t /*buflen*/, int flags, sockaddr* a, socklen_t* l) {
  return raw_recvfrom(fd, b, n, flags, a, l);
}
int raw_poll_chk(pollfd* fds, nfds_t count, int timeout_ms, size_t /*fdslen*/) {
  return raw_poll(fds, count, timeout_ms);
}
int raw_ppoll_chk(pollfd* fds, nfds_t count, const timespec* timeout, const sigset_t* mask, size_t /*fdslen*/) {
  return raw_ppoll(fds, count, timeout, mask);
}
int raw_close(int fd) {
  return static_cast<int>(sys(SYS_close, fd));
}
int raw_close_range(unsigned int first, unsigned int last, int flags) {
  return static_cast<int>(sys(SYS_close_range, first, last, flags));
}
void raw_closefrom(int lowfd) {
  raw_close_range(static_cast<unsigned int>(lowfd), ~0U, 0);
}
int raw_dup(int fd) {
  return static_cast<int>(sys(SYS_dup, fd));
}
int raw_dup2(int fd, int to) {
  return static_cast<int>(sys(SYS_dup2, fd, to));
}
int raw_dup3(int fd, int to, int flags) {
  return static_cast<int>(sys(SYS_dup3, fd, to, flags));
}
int raw_fcntl(int fd, int cmd, ...) {
  va_list args;
  va_start(args, cmd);
  const long value = va_arg(args, long);
  va_end(args);
  return static_cast<int>(sys(SYS_fcntl, fd, cmd, value));
}
// The exec family: execve and execveat are system calls, fexecve is execveat of the descriptor
// itself (AT_EMPTY_PATH), execvpe's search of PATH is libc's alone.
int raw_execve(const char* path, char* const argv[], char* const envp[]) {
  return static_cast<int>(sys(SYS_execve, arg(path), arg(argv), arg(envp)));
}
int raw_execveat(int dirfd, const char* path, char* const argv[], char* const envp[], int flags) {
  return static_cast<int>(sys(SYS_execveat, dirfd, arg(path), arg(argv), arg(envp), flags));
}
int raw_fexecve(int fd, char* const argv[], char* const envp[]) {
  return raw_execveat(fd, "", argv, envp, AT_EMPTY_PATH);
}
void raw_exit(int status) {
  for (;;) {
    (void)sys(SYS_exit_group, status);
  }
}
int unresolved_execvpe(const char* /*file*/, char* const /*argv*/[], char* const /*envp*/[]) {
  errno = ENOSYS;
  return -1;
}
// fclose has no system call of its own; dlsym(RTLD_NEXT) finds libc's in every real setting.
int unresolved_fclose(FILE* /*stream*/) {
  errno = ENOSYS;
  return EOF;
}
// posix_spawn has no system call of its own; dlsym(RTLD_NEXT) finds libc's.
int unresolved_posix_spawn(pid_t* /*pid*/, const char* /*path*/, const posix_spawn_file_actions_t* /*actions*/,
                           const posix_spawnattr_t* /*attributes*/, char* const /*argv*/[], char* const /*envp*/[]) {
  return ENOSYS;
}
// _Fork (glibc 2.34) updates libc's own thread data: no system call stands in for it.
pid_t unresolved_fork() {
  errno = ENOSYS;
  return -1;
}
// system, popen, the dprintf family and aio_write have no system call of their own either.
int unresolved_system(const char* /*command*/) {
  errno = ENOSYS;
  return -1;
}
FILE* unresolved_popen(const char* /*command*/, const char* /*type*/) {
  errno = ENOSYS;
  return nullptr;
}
int unresolved_vdprintf(int /*fd*/, const char* /*format*/, va_list /*args*/) {
  errno = ENOSYS;
  return -1;
}
int unresolved_vdprintf_chk(int /*fd*/, int /*flag*/, const char* /*format*/, va_list /*args*/) {
  errno = ENOSYS;
  return -1;
}
int unresolved_aio_write(aiocb* /*request*/) {
  errno = ENOSYS;
  return -1;
}
int unresolved_aio_write64(aiocb64* /*request*/) {
  errno = ENOSYS;
  return -1;
}
FILE* unresolved_fdopen(int /*fd*/, const char* /*mode*/) {
  errno = ENOSYS;
  return nullptr;
}
// signal() installs through libc's sigaction; dlsym(RTLD_NEXT) finds libc's.
sighandler_t unresolved_signal(int /*signal_number*/, sighandler_t /*handler*/) {
  errno = ENOSYS;
  return SIG_ERR;
}
// sigaction's kernel form needs libc's signal restorer; dlsym(RTLD_NEXT) finds libc's.
int unresolved_sigaction(int /*signal_number*/, const struct sigaction* /*act*/, struct sigaction* /*old*/) {
  errno = ENOSYS;
  return -1;
}

}  // namespace

namespace {
std::atomic<NextResolver> g_resolver{nullptr};
}  // namespace

void set_next_resolver(NextResolver resolver) noexcept {
  g_resolver.store(resolver, std::memory_order_release);
}

void* resolve_next_symbol(const char* name) noexcept {
  if (const NextResolver resolver = g_resolver.load(std::memory_order_acquire)) {
    return resolver(name);
  }
  return dlsym(RTLD_NEXT, name);
}

NextSymbols& next_symbols() noexcept {
  // constinit: usable from the first hook, before any constructor has run.
  static constinit NextSymbols symbols{
#define TCPTUNE_HOOK_NEXT(name, fallback) {#name, fallback},
#include "hook_table.def"
  };
  return symbols;
}

void resolve_all_next_symbols() noexcept {
  NextSymbols& symbols = next_symbols();
#define TCPTUNE_HOOK_NEXT(name, fallback) symbols.name.resolve();
#include "hook_table.def"
}

}  // namespace tcptune::shim
