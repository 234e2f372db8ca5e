// The core's side of each hook of hook_table.def: what the exported hook (shim/stage/hooks.c)
// calls once the core is loaded. Each is thin: core calls around the next definition. errno is
// preserved by the core; an entry never adds failures of its own.
#include "core_entries.hpp"

#include <aio.h>
#include <fcntl.h>
#include <linux/close_range.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <optional>

#include "app_memory.hpp"
#include "errno_saver.hpp"
#include "exec_flush.hpp"
#include "keep_warm.hpp"
#include "next_symbols.hpp"
#include "process_runtime.hpp"
#include "signal_context.hpp"
#include "socket_events.hpp"
#include "telemetry_worker.hpp"
#include "wait_push.hpp"

namespace next = tcptune::shim::next;
namespace core = tcptune::shim;

// Named as libc's functions, in their own namespace; hidden, as all of the core but its attach.
namespace tcptune::shim::entry {
// NOLINTBEGIN(readability-identifier-naming): libc's names

int socket(int domain, int type, int protocol) {
  const int fd = next::socket(domain, type, protocol);
  if (fd >= 0) {
    const core::ErrnoSaver saver;
    core::on_socket_created(fd, domain, type, protocol);
  }
  return fd;
}

int connect(int fd, const sockaddr* addr, socklen_t len) {
  core::before_connect(fd, addr, len);
  const int result = next::connect(fd, addr, len);
  core::after_connect(fd, result);
  return result;
}

int listen(int fd, int backlog) {
  core::before_listen(fd);
  return next::listen(fd, backlog);
}

int accept(int fd, sockaddr* addr, socklen_t* len) {
  core::push_before_wait();
  core::AcceptPeer peer{addr, len};
  const int accepted = next::accept(fd, peer.address(), peer.length());
  core::after_accept(fd, accepted, peer);
  return accepted;
}

int accept4(int fd, sockaddr* addr, socklen_t* len, int flags) {
  core::push_before_wait();
  core::AcceptPeer peer{addr, len};
  const int accepted = next::accept4(fd, peer.address(), peer.length(), flags);
  core::after_accept(fd, accepted, peer);
  return accepted;
}

int setsockopt(int fd, int level, int name, const void* value, socklen_t len) {
  const core::SockoptVerdict verdict = core::on_app_setsockopt(fd, level, name, value, len);
  if (verdict == core::SockoptVerdict::swallow) {
    return 0;
  }
  const int result = next::setsockopt(fd, level, name, value, len);
  if (verdict == core::SockoptVerdict::pass_then_push) {
    core::push_held_tail(fd);
  }
  return result;
}

int getsockopt(int fd, int level, int name, void* value, socklen_t* len) {
  if (core::answer_app_getsockopt(fd, level, name, value, len)) {
    return 0;
  }
  const int result = next::getsockopt(fd, level, name, value, len);
  core::after_app_getsockopt(fd, level, name, value, len, result);
  return result;
}

ssize_t write(int fd, const void* buf, size_t count) {
  return core::tracked_write(
      fd, [&](ssize_t) { return count; }, core::BufferBytes{buf}, [&] { return next::write(fd, buf, count); });
}

ssize_t send(int fd, const void* buf, size_t count, int flags) {
  return core::tracked_write(
      fd, [&](ssize_t) { return count; }, core::BufferBytes{buf}, [&] { return next::send(fd, buf, count, flags); },
      flags);
}

ssize_t sendto(int fd, const void* buf, size_t count, int flags, const sockaddr* addr, socklen_t len) {
  return core::tracked_sendto(fd, buf, count, flags, addr, len,
                              [&] { return next::sendto(fd, buf, count, flags, addr, len); });
}

ssize_t sendmsg(int fd, const msghdr* message, int flags) {
  return core::tracked_sendmsg(fd, message, flags, [&] { return next::sendmsg(fd, message, flags); });
}

int sendmmsg(int fd, mmsghdr* messages, unsigned int count, int flags) {
  return core::tracked_sendmmsg(fd, messages, flags, [&] { return next::sendmmsg(fd, messages, count, flags); });
}

ssize_t writev(int fd, const iovec* iov, int count) {
  return core::tracked_write(
      fd, [&](ssize_t result) { return core::iov_bytes_after(result, iov, static_cast<std::size_t>(count)); },
      core::IovecBytes{iov, static_cast<std::size_t>(count)}, [&] { return next::writev(fd, iov, count); });
}

// pwritev2 with offset -1 writes at the current position, which on a socket is writev.
ssize_t pwritev2(int fd, const iovec* iov, int count, off_t offset, int flags) {
  if (offset != -1) {
    return next::pwritev2(fd, iov, count, offset, flags);  // at an offset: never a socket (ESPIPE)
  }
  return core::tracked_write(
      fd, [&](ssize_t result) { return core::iov_bytes_after(result, iov, static_cast<std::size_t>(count)); },
      core::IovecBytes{iov, static_cast<std::size_t>(count)},
      [&] { return next::pwritev2(fd, iov, count, offset, flags); });
}

ssize_t pwritev64v2(int fd, const iovec* iov, int count, off64_t offset, int flags) {
  if (offset != -1) {
    return next::pwritev64v2(fd, iov, count, offset, flags);
  }
  return core::tracked_write(
      fd, [&](ssize_t result) { return core::iov_bytes_after(result, iov, static_cast<std::size_t>(count)); },
      core::IovecBytes{iov, static_cast<std::size_t>(count)},
      [&] { return next::pwritev64v2(fd, iov, count, offset, flags); });
}

ssize_t sendfile(int out_fd, int in_fd, off_t* offset, size_t count) {
  return core::tracked_write(
      out_fd, [&](ssize_t) { return count; }, core::FileBytes{in_fd, offset},
      [&] { return next::sendfile(out_fd, in_fd, offset, count); });
}

ssize_t sendfile64(int out_fd, int in_fd, off_t* offset, size_t count) {
  return core::tracked_write(
      out_fd, [&](ssize_t) { return count; }, core::FileBytes{in_fd, offset},
      [&] { return next::sendfile64(out_fd, in_fd, offset, count); });
}

// Into a socket, splice is a write; SPLICE_F_MORE says the message goes on, as MSG_MORE does.
ssize_t splice(int in_fd, loff_t* in_offset, int out_fd, loff_t* out_offset, size_t count, unsigned int flags) {
  return core::tracked_write(
      out_fd, [&](ssize_t) { return count; }, core::PipeBytes{in_fd},
      [&] { return next::splice(in_fd, in_offset, out_fd, out_offset, count, flags); },
      (flags & SPLICE_F_MORE) != 0 ? MSG_MORE : 0);
}

ssize_t read(int fd, void* buf, size_t count) {
  return core::tracked_read(fd, [&] { return next::read(fd, buf, count); });
}

ssize_t recv(int fd, void* buf, size_t count, int flags) {
  return core::tracked_read(fd, [&] { return next::recv(fd, buf, count, flags); });
}

ssize_t recvfrom(int fd, void* buf, size_t count, int flags, sockaddr* addr, socklen_t* len) {
  return core::tracked_read(fd, [&] { return next::recvfrom(fd, buf, count, flags, addr, len); });
}

ssize_t recvmsg(int fd, msghdr* message, int flags) {
  return core::tracked_recvmsg(fd, message, [&] { return next::recvmsg(fd, message, flags); });
}

ssize_t readv(int fd, const iovec* iov, int count) {
  return core::tracked_read(fd, [&] { return next::readv(fd, iov, count); });
}

// _FORTIFY_SOURCE's variants of the read family (a buffer of known size).
ssize_t __read_chk(int fd, void* buf, size_t count, size_t buflen) {
  return core::tracked_read(fd, [&] { return next::__read_chk(fd, buf, count, buflen); });
}

ssize_t __recv_chk(int fd, void* buf, size_t count, size_t buflen, int flags) {
  return core::tracked_read(fd, [&] { return next::__recv_chk(fd, buf, count, buflen, flags); });
}

ssize_t __recvfrom_chk(int fd, void* buf, size_t count, size_t buflen, int flags, sockaddr* addr, socklen_t* len) {
  return core::tracked_read(fd, [&] { return next::__recvfrom_chk(fd, buf, count, buflen, flags, addr, len); });
}

int __poll_chk(pollfd* fds, nfds_t count, int timeout, size_t fdslen) {
  core::push_before_wait();
  return next::__poll_chk(fds, count, timeout, fdslen);
}

int __ppoll_chk(pollfd* fds, nfds_t count, const timespec* timeout, const sigset_t* mask, size_t fdslen) {
  core::push_before_wait();
  return next::__ppoll_chk(fds, count, timeout, mask, fdslen);
}

// The poll family: a thread turning to wait for input (wait_push.hpp).
int poll(pollfd* fds, nfds_t count, int timeout) {
  core::push_before_wait();
  return next::poll(fds, count, timeout);
}

int ppoll(pollfd* fds, nfds_t count, const timespec* timeout, const sigset_t* mask) {
  core::push_before_wait();
  return next::ppoll(fds, count, timeout, mask);
}

int select(int count, fd_set* reads, fd_set* writes, fd_set* errors, timeval* timeout) {
  core::push_before_wait();
  return next::select(count, reads, writes, errors, timeout);
}

int pselect(int count, fd_set* reads, fd_set* writes, fd_set* errors, const timespec* timeout, const sigset_t* mask) {
  core::push_before_wait();
  return next::pselect(count, reads, writes, errors, timeout, mask);
}

int epoll_wait(int epoll_fd, epoll_event* events, int max_events, int timeout) {
  core::push_before_wait();
  return next::epoll_wait(epoll_fd, events, max_events, timeout);
}

int epoll_pwait(int epoll_fd, epoll_event* events, int max_events, int timeout, const sigset_t* mask) {
  core::push_before_wait();
  return next::epoll_pwait(epoll_fd, events, max_events, timeout, mask);
}

int epoll_pwait2(int epoll_fd, epoll_event* events, int max_events, const timespec* timeout, const sigset_t* mask) {
  core::push_before_wait();
  return next::epoll_pwait2(epoll_fd, events, max_events, timeout, mask);
}

int close(int fd) {
  if (!core::before_close(fd)) {
    return 0;  // the shim's own log: closing it would let a later app fd take its number
  }
  return next::close(fd);
}

namespace {
// close_range over [first, last] around the shim's own descriptors (daemons close everything
// above stderr). Returns the first failure, or 0.
int close_range_around_own(unsigned int first, unsigned int last, int flags) {
  int own[core::kMaxLogFds];
  const int count = core::shim_fds_in_range(first, last, own);
  if (count == 0 || (flags & CLOSE_RANGE_CLOEXEC) != 0) {
    return next::close_range(first, last, flags);
  }
  unsigned int from = first;
  for (int i = 0; i < count; ++i) {
    const auto skipped = static_cast<unsigned int>(own[i]);
    if (skipped > from) {
      if (const int result = next::close_range(from, skipped - 1, flags); result != 0) {
        return result;
      }
    }
    from = skipped + 1;
  }
  return from != 0 && from <= last ? next::close_range(from, last, flags) : 0;
}
}  // namespace

int close_range(unsigned int first, unsigned int last, int flags) {
  core::before_close_range(first, last, flags);
  return close_range_around_own(first, last, flags);
}

void closefrom(int lowest) {
  if (lowest < 0) {
    next::closefrom(lowest);
    return;
  }
  core::before_close_range(static_cast<unsigned int>(lowest), ~0U, 0);
  int own[core::kMaxLogFds];
  const int count = core::shim_fds_in_range(static_cast<unsigned int>(lowest), ~0U, own);
  if (count == 0) {
    next::closefrom(lowest);
    return;
  }
  // Below the highest: around each; above it, closefrom itself (which falls back where
  // close_range is missing).
  const int highest = own[count - 1];
  if (highest > lowest) {
    (void)close_range_around_own(static_cast<unsigned int>(lowest), static_cast<unsigned int>(highest - 1), 0);
  }
  next::closefrom(highest + 1);
}

int dup(int fd) {
  const int copy = next::dup(fd);
  core::after_dup(fd, copy);
  return copy;
}

int dup2(int fd, int target) {
  core::before_dup_onto(fd, target);
  const int copy = next::dup2(fd, target);
  core::after_dup(fd, copy);
  return copy;
}

int dup3(int fd, int target, int flags) {
  if ((flags & ~O_CLOEXEC) == 0) {  // other flags: EINVAL, nothing closed
    core::before_dup_onto(fd, target);
  }
  const int copy = next::dup3(fd, target, flags);
  core::after_dup(fd, copy);
  return copy;
}

namespace {
// The descriptor F_DUPFD and F_DUPFD_CLOEXEC made is a copy of fd.
int after_fcntl(int fd, int cmd, int result) {
  if (cmd == F_DUPFD || cmd == F_DUPFD_CLOEXEC) {
    core::after_dup(fd, result);
  }
  return result;
}
}  // namespace

// fcntl's third argument is an int, a long or a pointer depending on cmd; on this ABI all of
// them travel in one register, so it is forwarded as an unsigned long.
int fcntl(int fd, int cmd, ...) {
  va_list args;
  va_start(args, cmd);
  const unsigned long argument = va_arg(args, unsigned long);
  va_end(args);
  return after_fcntl(fd, cmd, next::fcntl(fd, cmd, argument));
}

int fcntl64(int fd, int cmd, ...) {
  va_list args;
  va_start(args, cmd);
  const unsigned long argument = va_arg(args, unsigned long);
  va_end(args);
  return after_fcntl(fd, cmd, next::fcntl64(fd, cmd, argument));
}

// The app's handlers run behind the shim's trampoline, so hooks know when they are called
// from inside one (signal_context.hpp).
int sigaction(int signal_number, const struct sigaction* act, struct sigaction* old) {
  return core::app_sigaction(signal_number, act, old);
}

// glibc's signal(): BSD semantics (the signal blocked while its handler runs, SA_RESTART).
sighandler_t signal(int signal_number, sighandler_t handler) {
  struct sigaction act {};
  act.sa_handler = handler;
  sigemptyset(&act.sa_mask);
  if (signal_number > 0 && signal_number < NSIG) {
    sigaddset(&act.sa_mask, signal_number);
  }
  act.sa_flags = SA_RESTART;
  struct sigaction old {};
  if (core::app_sigaction(signal_number, &act, &old) != 0) {
    return SIG_ERR;
  }
  return old.sa_handler;
}

// posix_spawn starts its child without running fork handlers: kept-warm sockets, which the
// child may share, stop being kept warm first, as after fork().
int posix_spawn(pid_t* pid, const char* path, const posix_spawn_file_actions_t* actions,
                const posix_spawnattr_t* attributes, char* const argv[], char* const envp[]) {
  core::keep_warm_after_fork_in_parent();
  return next::posix_spawn(pid, path, actions, attributes, argv, envp);
}

int posix_spawnp(pid_t* pid, const char* file, const posix_spawn_file_actions_t* actions,
                 const posix_spawnattr_t* attributes, char* const argv[], char* const envp[]) {
  core::keep_warm_after_fork_in_parent();
  return next::posix_spawnp(pid, file, actions, attributes, argv, envp);
}

// _Fork runs no fork handlers: the sockets the child shares stop being kept warm first, as
// fork()'s handler does, which also leaves no heartbeat in progress for the child to wait on.
// The child keeps its parent's state: it asks getpid whether it is its parent from then on.
pid_t _Fork() {  // NOLINT(bugprone-reserved-identifier)
  core::keep_warm_after_fork_in_parent();
  const pid_t child = next::_Fork();
  if (child == 0) {
    core::note_forked_without_handlers();
  }
  return child;
}

// _exit runs no exit handlers: what the worker was handed is written first (not from a signal
// handler nor in a vfork child, which leave the records as they are).
void _exit(int status) {  // NOLINT(bugprone-reserved-identifier)
  core::flush_telemetry_before_quick_exit();
  next::_exit(status);
  __builtin_unreachable();
}

// system and popen spawn through glibc's internal posix_spawn, which no hook sees: the sockets
// their program inherits (no FD_CLOEXEC) stop being kept warm first.
int system(const char* command) {
  core::keep_warm_before_exec_in_child();
  return next::system(command);
}

FILE* popen(const char* command, const char* type) {
  core::keep_warm_before_exec_in_child();
  return next::popen(command, type);
}

// Formatted and asynchronous writes reach the socket through libc's internal write, past the
// hooks: keep-warm cannot follow their bytes, so it ends on that socket first.
int vdprintf(int fd, const char* format, va_list args) {
  core::before_unfollowed_write(fd);
  return next::vdprintf(fd, format, args);
}

int __vdprintf_chk(int fd, int flag, const char* format,
                   va_list args) {  // NOLINT(bugprone-reserved-identifier)
  core::before_unfollowed_write(fd);
  return next::__vdprintf_chk(fd, flag, format, args);
}

int aio_write(aiocb* request) {
  if (const std::optional<int> fd = core::read_app_object<int>(&request->aio_fildes)) {
    core::before_unfollowed_write(*fd);
  }
  return next::aio_write(request);
}

int aio_write64(aiocb64* request) {
  if (const std::optional<int> fd = core::read_app_object<int>(&request->aio_fildes)) {
    core::before_unfollowed_write(*fd);
  }
  return next::aio_write64(request);
}

// exec replaces the process image: the records on their way to the log are written first
// (exec_flush.hpp). The call returns only when it failed, and then the program goes on.
int execve(const char* path, char* const argv[], char* const envp[]) {
  const bool flushed = core::before_exec({.path = path});
  const int result = next::execve(path, argv, envp);
  core::after_failed_exec(flushed);
  return result;
}

int execvpe(const char* file, char* const argv[], char* const envp[]) {
  const bool flushed = core::before_exec({.path = file, .search = true});
  const int result = next::execvpe(file, argv, envp);
  core::after_failed_exec(flushed);
  return result;
}

int fexecve(int fd, char* const argv[], char* const envp[]) {
  const bool flushed = core::before_exec({.dirfd = fd, .path = "", .flags = AT_EMPTY_PATH});
  const int result = next::fexecve(fd, argv, envp);
  core::after_failed_exec(flushed);
  return result;
}

int execveat(int dirfd, const char* path, char* const argv[], char* const envp[], int flags) {
  const bool flushed = core::before_exec({.dirfd = dirfd, .path = path, .flags = flags});
  const int result = next::execveat(dirfd, path, argv, envp, flags);
  core::after_failed_exec(flushed);
  return result;
}

FILE* fdopen(int fd, const char* mode) {
  FILE* stream = next::fdopen(fd, mode);
  if (stream != nullptr) {
    const core::ErrnoSaver saver;
    core::after_fdopen(fd);
  }
  return stream;
}

int fclose(FILE* stream) {
  if (stream != nullptr) {
    const core::ErrnoSaver saver;
    const int fd = fileno(stream);
    if (fd >= 0) {
      (void)core::before_close(fd);  // a FILE is never the shim's log
    }
  }
  return next::fclose(stream);
}

// NOLINTEND(readability-identifier-naming)
}  // namespace tcptune::shim::entry

namespace tcptune::shim {

namespace {
void after_rights_received_before_core(const msghdr* message) {
  const ErrnoSaver saver;
  after_rights_received(*message);
}
}  // namespace

const tcptune_core_entries& core_entries() noexcept {
  static constinit const tcptune_core_entries entries{
#define TCPTUNE_HOOK_NEXT(name, fallback) .name = entry::name,
#include "hook_table.def"
      .after_rights_received = after_rights_received_before_core,
      .adopt_inherited_sockets = adopt_inherited_sockets,
  };
  return entries;
}

}  // namespace tcptune::shim
