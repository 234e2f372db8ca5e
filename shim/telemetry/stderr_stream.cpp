#include "stderr_stream.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>

#include "held_signals.hpp"
#include "private_descriptor.hpp"

namespace tcptune::telemetry {

namespace {

int raw_close(int fd) noexcept {
  return static_cast<int>(syscall(SYS_close, fd));
}

// A close-on-exec copy of `fd` at `floor` or above, or out of the app's range where the
// descriptor limit is lower (private_descriptor.hpp); -1 where no number is free of the app's.
int raw_copy(int fd, int floor) noexcept {
  return copy_out_of_app_range(fd, floor);
}

// `fd` renumbered at `floor` or above (the original closed); -1, `fd` closed, on failure.
int raw_move(int fd, int floor) noexcept {
  if (fd >= floor) {
    return fd;  // there already (a copy would need one number more)
  }
  const int moved = raw_copy(fd, floor);
  raw_close(fd);
  return moved;
}

// An unbound unix socket's name is its family alone.
bool is_unnamed(socklen_t length) noexcept {
  return length <= offsetof(sockaddr_un, sun_path);
}

// fd 2 opened again, nonblocking, as a description of its own; -errno on failure. The same
// file as fd 2, or not at all (another thread may have put something else there meanwhile).
int reopen_stderr(const struct stat& stderr_info) noexcept {
  const long fd = syscall(SYS_openat, AT_FDCWD, "/proc/self/fd/2", O_WRONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) {
    return -errno;
  }
  struct stat info {};
  if (syscall(SYS_fstat, static_cast<int>(fd), &info) != 0 || info.st_dev != stderr_info.st_dev ||
      info.st_ino != stderr_info.st_ino) {
    raw_close(static_cast<int>(fd));
    return -EBADF;
  }
  return static_cast<int>(fd);
}

}  // namespace

const char* StderrStream::open(int floor) noexcept {
  close();
  floor_ = floor;
  struct stat info {};
  if (syscall(SYS_fstat, STDERR_FILENO, &info) != 0) {
    return "stderr (fd 2) is closed";
  }
  stderr_device_ = info.st_dev;
  stderr_inode_ = info.st_ino;
  const long flags = syscall(SYS_fcntl, STDERR_FILENO, F_GETFL);
  if (flags < 0 || (flags & O_ACCMODE) == O_RDONLY) {
    return "stderr (fd 2) is not open for writing";
  }
  if (S_ISREG(info.st_mode)) {
    kind_ = Kind::file;
    fd_ = raw_copy(STDERR_FILENO, floor);
  } else if (S_ISFIFO(info.st_mode)) {
    // A description of its own, nonblocking, where this user may open the pipe again: records
    // then share the pipe's pages with the app's lines. Elsewhere (a pipe of another user, as a
    // container's are root's) the relay, where each record takes a page of the pipe of its own.
    const int reopened = reopen_stderr(info);
    if (reopened >= 0) {
      kind_ = Kind::pipe;
      fd_ = raw_move(reopened, floor);
    } else if (reopened == -ENXIO) {
      return "stderr is a pipe without a reader";
    } else {
      kind_ = Kind::relayed_pipe;
      fd_ = raw_copy(STDERR_FILENO, floor);
      if (fd_ >= 0 && !open_relay()) {
        close();
        return "cannot create a pipe to relay records to stderr";
      }
    }
  } else if (S_ISCHR(info.st_mode)) {
    // A description of its own, nonblocking; the app's keeps its flags. Where this user may not
    // open the device again, the app's own serves if it is nonblocking already.
    kind_ = Kind::terminal;
    const int reopened = reopen_stderr(info);
    if (reopened >= 0) {
      fd_ = raw_move(reopened, floor);
    } else if ((flags & O_NONBLOCK) != 0) {
      fd_ = raw_copy(STDERR_FILENO, floor);
    } else {
      return "stderr is a terminal or device this process cannot open again without blocking";
    }
  } else if (S_ISSOCK(info.st_mode)) {
    int domain = 0;
    socklen_t length = sizeof domain;
    if (syscall(SYS_getsockopt, STDERR_FILENO, SOL_SOCKET, SO_DOMAIN, &domain, &length) != 0 || domain != AF_UNIX) {
      return "stderr is a network socket: the program's connection (inetd-style), not a log";
    }
    // journald's stream is a socket connected to its listener, unnamed on this side; one
    // accepted by the program (systemd's Accept=yes) has the listener's name: a connection.
    sockaddr_un own{};
    socklen_t own_length = sizeof own;
    if (syscall(SYS_getsockname, STDERR_FILENO, &own, &own_length) != 0 || !is_unnamed(own_length)) {
      return "stderr is a unix socket the program accepted: its connection, not a log";
    }
    kind_ = Kind::socket;
    fd_ = raw_copy(STDERR_FILENO, floor);
  } else {
    return "stderr is neither a pipe, a terminal, a unix socket nor a regular file";
  }
  if (fd_ < 0) {
    close();
    return "no descriptor of its own is free: out of descriptors, or RLIMIT_NOFILE leaves only the "
           "program's (a hard limit as low as the soft one, under 900)";
  }
  return nullptr;
}

bool StderrStream::open_relay() noexcept {
  int ends[2];
  if (syscall(SYS_pipe2, ends, O_CLOEXEC | O_NONBLOCK) != 0) {
    return false;
  }
  relay_[0] = raw_move(ends[0], floor_);
  relay_[1] = raw_move(ends[1], floor_);
  return relay_[0] >= 0 && relay_[1] >= 0;
}

void StderrStream::close() noexcept {
  for (int* fd : {&fd_, &relay_[0], &relay_[1]}) {
    if (*fd >= 0) {
      raw_close(*fd);
      *fd = -1;
    }
  }
  tail_size_ = 0;
  reopen_pending_ = false;
}

bool StderrStream::still_names_stderr() const noexcept {
  struct stat info {};
  const int saved = errno;
  const bool same =
      syscall(SYS_fstat, STDERR_FILENO, &info) == 0 && info.st_dev == stderr_device_ && info.st_ino == stderr_inode_;
  errno = saved;
  return same;
}

void StderrStream::move_away_from(int fd) noexcept {
  for (int* own : {&fd_, &relay_[0], &relay_[1]}) {
    if (*own == fd && fd >= 0) {
      const int moved = raw_copy(fd, fd + 1);
      if (moved >= 0) {
        raw_close(fd);
        *own = moved;
      }
    }
  }
}

void StderrStream::detach_in_child() noexcept {
  // The reader the parent saw draining may have stopped long since: the child's summary waits for
  // it only once the child itself has seen it drain, or each of many children waits out its exit.
  was_full_ = false;
  drained_after_full_ = false;
  if (fd_ < 0) {
    return;
  }
  close();
  reopen_pending_ = true;
}

StderrStream::Result StderrStream::write(std::string_view line) noexcept {
  if (reopen_pending_) {
    // A forked child's first record: fd 2 as the parent had it, or nothing.
    if (!still_names_stderr() || open(floor_) != nullptr) {
      close();
      return Result::ended;
    }
  }
  if (fd_ < 0) {
    return Result::ended;
  }
  if (!still_names_stderr()) {
    return Result::ended;  // the app put another file at fd 2 (freopen, daemon): its stderr went there
  }
  if (line.size() > kStderrRecordLimit) {
    return Result::too_long;
  }
  Result result = Result::ended;
  switch (kind_) {
    case Kind::file:
    case Kind::pipe: result = write_whole(line); break;
    case Kind::relayed_pipe: result = write_relayed(line); break;
    case Kind::terminal:
    case Kind::socket: result = write_stream(line); break;
  }
  drained_after_full_ = drained_after_full_ || (was_full_ && result == Result::written);
  was_full_ = was_full_ || result == Result::full;
  return result;
}

bool StderrStream::wait_for_room(int timeout_ms) const noexcept {
  pollfd room{fd_, POLLOUT, 0};
  const timespec timeout{timeout_ms / 1000, static_cast<long>(timeout_ms % 1000) * 1'000'000};
  return fd_ >= 0 && syscall(SYS_ppoll, &room, 1, &timeout, nullptr, 0) == 1 && (room.revents & POLLOUT) != 0;
}

StderrStream::Result StderrStream::write_whole(std::string_view line) noexcept {
  // A pipe takes a write of at most PIPE_BUF bytes whole or not at all (EAGAIN when full).
  HeldSignals held;
  long written = 0;
  do {
    written = syscall(SYS_write, fd_, line.data(), line.size());
  } while (written < 0 && errno == EINTR);
  const int error = written < 0 ? errno : 0;
  held.take_back(error);
  if (written == static_cast<long>(line.size())) {
    return Result::written;
  }
  // A regular file is the app's (its own lines may follow): a short write is not cut off again.
  return kind_ == Kind::pipe && (error == EAGAIN || error == EWOULDBLOCK) ? Result::full : Result::ended;
}

void StderrStream::drain_relay() noexcept {
  while (syscall(SYS_read, relay_[0], tail_, sizeof tail_) > 0) {
  }
}

StderrStream::Result StderrStream::write_relayed(std::string_view line) noexcept {
  // Into the empty relay in one write: one pipe buffer, which splice moves whole or not at all
  // (the kernel moves buffers between pipes under both pipes' locks).
  const long relayed = syscall(SYS_write, relay_[1], line.data(), line.size());
  if (relayed != static_cast<long>(line.size())) {
    drain_relay();
    return Result::ended;
  }
  long moved = 0;
  int error = 0;
  {
    HeldSignals held;
    do {
      moved = syscall(SYS_splice, relay_[0], nullptr, fd_, nullptr, line.size(), SPLICE_F_NONBLOCK);
    } while (moved < 0 && errno == EINTR);
    error = moved < 0 ? errno : 0;
    held.take_back(error);
  }
  if (moved == static_cast<long>(line.size())) {
    return Result::written;
  }
  drain_relay();
  if (moved >= 0 || error == EAGAIN) {
    return Result::full;
  }
  return Result::ended;  // EPIPE: the reader is gone
}

long StderrStream::write_some(const char* data, std::size_t size) noexcept {
  long written = 0;
  if (kind_ == Kind::socket) {
    do {
      written = syscall(SYS_sendto, fd_, data, size, MSG_DONTWAIT | MSG_NOSIGNAL, nullptr, 0);
    } while (written < 0 && errno == EINTR);
    return written;
  }
  HeldSignals held;
  do {
    written = syscall(SYS_write, fd_, data, size);
  } while (written < 0 && errno == EINTR);
  held.take_back(written < 0 ? errno : 0);
  return written;
}

StderrStream::Result StderrStream::write_stream(std::string_view line) noexcept {
  // A terminal or a stream socket may take part of a record: the rest goes first next time.
  if (tail_size_ != 0) {
    const long written = write_some(tail_, tail_size_);
    if (written < 0) {
      return errno == EAGAIN || errno == EWOULDBLOCK ? Result::full : Result::ended;
    }
    std::memmove(tail_, tail_ + written, tail_size_ - static_cast<std::size_t>(written));
    tail_size_ -= static_cast<std::size_t>(written);
    if (tail_size_ != 0) {
      return Result::full;
    }
  }
  const long written = write_some(line.data(), line.size());
  if (written < 0) {
    return errno == EAGAIN || errno == EWOULDBLOCK ? Result::full : Result::ended;
  }
  tail_size_ = line.size() - static_cast<std::size_t>(written);
  std::memcpy(tail_, line.data() + written, tail_size_);
  return Result::written;
}

}  // namespace tcptune::telemetry
