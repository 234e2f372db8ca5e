// Log records on the process's own standard error (`TCPTUNE_LOG=stderr`), which Docker,
// Kubernetes and journald collect, written so that the app that shares it notices nothing:
// - each record goes out in one write of at most PIPE_BUF (4096) bytes, so it never interleaves
//   with the app's lines; a longer one is refused (the caller shortens it or drops it);
// - nothing blocks: a full pipe (a reader that is behind, or reads nothing) drops the record, and
//   the caller counts it;
// - the app's open file description keeps its flags (no O_NONBLOCK set on it): a pipe, FIFO or
//   terminal is written through a description of its own, /proc/self/fd/2 opened again with
//   O_NONBLOCK; a pipe this user may not open again (a container's pipes belong to root) by
//   splice(SPLICE_F_NONBLOCK) from a private relay pipe, each record then taking a page of the
//   pipe (16 records fill a 64 KiB pipe); a unix socket (journald's stream) by
//   send(MSG_DONTWAIT | MSG_NOSIGNAL); a regular file by appending to a copy of fd 2;
// - SIGPIPE, SIGXFSZ and SIGTTOU are held off around each write (held_signals.hpp);
// - once fd 2 names another file than it did at open (the app reopened it with freopen or
//   daemon(3), whose dup2 no hook sees), the stream ends rather than write where the app's lines
//   no longer go; a forked child holds nothing of its parent's stderr until it writes, so a
//   daemon that detaches never keeps its caller's pipe open (`$(daemon)` would wait for it).
// A network socket on fd 2 is the program's connection (inetd-style), never a log.
// Raw system calls only, no allocation: in the preloaded shim, libc's write, send, splice and
// close are the shim's own hooks, and open() may be called from a close hook in a signal handler.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace tcptune::telemetry {

// PIPE_BUF on Linux: the most one write to a pipe carries without interleaving with others'.
inline constexpr std::size_t kStderrRecordLimit = 4096;

class StderrStream {
 public:
  enum class Result : std::uint8_t {
    written,
    full,      // dropped: the reader is behind, or reads nothing
    too_long,  // dropped: more than kStderrRecordLimit bytes
    ended,     // the reader is gone, or the descriptor failed: nothing more will be written
  };

  StderrStream() = default;
  ~StderrStream() { close(); }
  StderrStream(const StderrStream&) = delete;
  StderrStream& operator=(const StderrStream&) = delete;

  // Takes descriptors of its own (close-on-exec, numbered from `floor` up where it can) for what
  // fd 2 is now. nullptr on success, else why not, as a constant string.
  const char* open(int floor) noexcept;
  // One record, ending in '\n', in one write.
  Result write(std::string_view line) noexcept;
  void close() noexcept;

  // Whether a reader drained the stream after it was once full: one that keeps up, briefly behind.
  // A pipe nobody reads is full from its first drop on, and never was drained.
  [[nodiscard]] bool drained_after_full() const noexcept { return drained_after_full_; }
  // Waits up to `timeout_ms` for room to write (poll, POLLOUT): true when there is some.
  [[nodiscard]] bool wait_for_room(int timeout_ms) const noexcept;

  [[nodiscard]] bool is_open() const noexcept { return fd_ >= 0 || reopen_pending_; }
  // Whether `fd` is one of the descriptors it holds (up to three: fd 2's copy and the relay).
  [[nodiscard]] bool holds(int fd) const noexcept {
    return fd >= 0 && (fd == fd_ || fd == relay_[0] || fd == relay_[1]);
  }
  [[nodiscard]] int descriptor(int index) const noexcept { return index == 0 ? fd_ : relay_[index - 1]; }
  static constexpr int kDescriptors = 3;
  // `fd` is one of them and the app wants its number (dup2 onto it): it moves above it.
  void move_away_from(int fd) noexcept;
  // In a forked child: its descriptors go (a daemon that reopens stderr on /dev/null must not
  // keep its parent's pipe open); the next write opens them again if fd 2 still names the same
  // file, with a relay of the child's own (parent and child never splice each other's records).
  void detach_in_child() noexcept;

 private:
  enum class Kind : std::uint8_t { file, pipe, relayed_pipe, terminal, socket };
  Result write_whole(std::string_view line) noexcept;
  Result write_relayed(std::string_view line) noexcept;
  Result write_stream(std::string_view line) noexcept;
  long write_some(const char* data, std::size_t size) noexcept;
  void drain_relay() noexcept;
  bool open_relay() noexcept;
  // fd 2 names the file it named at open.
  [[nodiscard]] bool still_names_stderr() const noexcept;

  int fd_ = -1;
  int relay_[2] = {-1, -1};
  int floor_ = 3;
  Kind kind_ = Kind::file;
  // What fd 2 named at open (st_dev, st_ino).
  std::uint64_t stderr_device_ = 0;
  std::uint64_t stderr_inode_ = 0;
  bool reopen_pending_ = false;
  bool was_full_ = false;
  bool drained_after_full_ = false;
  // What a terminal or stream socket took only part of, written before the next record (the
  // pipe's scratch for draining the relay otherwise).
  char tail_[kStderrRecordLimit]{};
  std::size_t tail_size_ = 0;
};

}  // namespace tcptune::telemetry
