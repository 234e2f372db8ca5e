#include "app_memory.hpp"

#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>

#include "errno_saver.hpp"

namespace tcptune::shim {

namespace {

// Set once process_vm_readv/writev answer ENOSYS (Linux before 3.2) or EPERM (a seccomp
// profile, Docker's default before Linux 4.8): they are not tried again.
std::atomic<bool> g_refused{false};

bool note_refusal() noexcept {
  if (errno == ENOSYS || errno == EPERM) {
    g_refused.store(true, std::memory_order_relaxed);
    return true;
  }
  return false;
}

// Whether every byte of [source, source + size) can be read, asked of the kernel: for each
// page, rt_sigprocmask copies 8 bytes of it as a new mask (EFAULT where it cannot) and then
// rejects the invalid `how`, changing nothing. 4 KiB windows lie within one page on x86-64.
bool readable(const void* source, std::size_t size) noexcept {
  constexpr std::uintptr_t kPage = 4096;
  constexpr std::size_t kMaskBytes = 8;
  const auto start = reinterpret_cast<std::uintptr_t>(source);
  if (size > UINTPTR_MAX - start) {
    return false;
  }
  for (std::uintptr_t at = start; at < start + size; at = (at & ~(kPage - 1)) + kPage) {
    const std::uintptr_t window = std::min(at, (at & ~(kPage - 1)) + kPage - kMaskBytes);
    if (syscall(SYS_rt_sigprocmask, -1, window, nullptr, kMaskBytes) != -1 || errno == EFAULT) {
      return false;  // EINVAL is the answer for readable bytes
    }
  }
  return true;
}

}  // namespace

bool read_app_memory(void* destination, const void* source, std::size_t size) noexcept {
  if (size == 0) {
    return true;
  }
  const ErrnoSaver saver;
  if (!g_refused.load(std::memory_order_relaxed)) {
    const iovec local{destination, size};
    const iovec remote{const_cast<void*>(source), size};
    if (process_vm_readv(getpid(), &local, 1, &remote, 1, 0) == static_cast<ssize_t>(size)) {
      return true;
    }
    if (!note_refusal()) {
      return false;
    }
  }
  if (!readable(source, size)) {
    return false;
  }
  std::memcpy(destination, source, size);
  return true;
}

bool write_app_memory(void* destination, const void* source, std::size_t size) noexcept {
  if (size == 0) {
    return true;
  }
  const ErrnoSaver saver;
  if (g_refused.load(std::memory_order_relaxed)) {
    return false;
  }
  const iovec local{const_cast<void*>(source), size};
  const iovec remote{destination, size};
  if (process_vm_writev(getpid(), &local, 1, &remote, 1, 0) == static_cast<ssize_t>(size)) {
    return true;
  }
  (void)note_refusal();
  return false;
}

bool app_memory_copies_refused() noexcept {
  return g_refused.load(std::memory_order_relaxed);
}

}  // namespace tcptune::shim
