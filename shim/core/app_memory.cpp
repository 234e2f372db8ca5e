#include "app_memory.hpp"

#include <sys/uio.h>
#include <unistd.h>

#include "errno_saver.hpp"

namespace tcptune::shim {

bool read_app_memory(void* destination, const void* source, std::size_t size) noexcept {
  if (size == 0) {
    return true;
  }
  const ErrnoSaver saver;
  const iovec local{destination, size};
  const iovec remote{const_cast<void*>(source), size};
  return process_vm_readv(getpid(), &local, 1, &remote, 1, 0) == static_cast<ssize_t>(size);
}

bool write_app_memory(void* destination, const void* source, std::size_t size) noexcept {
  if (size == 0) {
    return true;
  }
  const ErrnoSaver saver;
  const iovec local{const_cast<void*>(source), size};
  const iovec remote{destination, size};
  return process_vm_writev(getpid(), &local, 1, &remote, 1, 0) == static_cast<ssize_t>(size);
}

}  // namespace tcptune::shim
