// Restores errno on scope exit: the shim's own calls must never change what the app sees.
#pragma once

#include <cerrno>

namespace tcptune::shim {

class ErrnoSaver {
 public:
  ErrnoSaver() noexcept : saved_(errno) {}
  ~ErrnoSaver() { errno = saved_; }
  ErrnoSaver(const ErrnoSaver&) = delete;
  ErrnoSaver& operator=(const ErrnoSaver&) = delete;

 private:
  int saved_;
};

}  // namespace tcptune::shim
