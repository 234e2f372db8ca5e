// A descriptor of this process, closed when its owner goes: a duplicate of a program's socket
// must never outlive its use (holding one delays the peer's EOF).
#pragma once

#include <unistd.h>

#include <utility>

namespace tcptune::supervisor {

class OwnedFd {
 public:
  explicit OwnedFd(int fd = -1) noexcept : fd_(fd) {}
  ~OwnedFd() {
    if (fd_ >= 0) {
      close(fd_);
    }
  }
  OwnedFd(OwnedFd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  OwnedFd& operator=(OwnedFd&& other) noexcept {
    std::swap(fd_, other.fd_);
    return *this;
  }
  OwnedFd(const OwnedFd&) = delete;
  OwnedFd& operator=(const OwnedFd&) = delete;
  [[nodiscard]] int get() const noexcept { return fd_; }
  // The descriptor, no longer closed here.
  [[nodiscard]] int release() noexcept { return std::exchange(fd_, -1); }

 private:
  int fd_;
};

}  // namespace tcptune::supervisor
