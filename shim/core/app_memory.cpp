#include "app_memory.hpp"

#include <pthread.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>

#include "errno_saver.hpp"
#include "signal_context.hpp"

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

// This thread's stack, [low, high), learnt at its first read outside a signal handler
// (pthread_getattr_np reads /proc/self/maps for the main thread; for others it is their
// descriptor); high 0 until then.
thread_local std::uintptr_t t_stack_low = 0;
thread_local std::uintptr_t t_stack_high = 0;
thread_local bool t_stack_asked = false;

// Whether [source, source + size) lies on this thread's stack between the current frame and
// the stack's top: memory in use, so mapped. What apps pass their calls most often (a
// sockaddr, a socklen_t in a local variable) is read there without a system call.
bool on_own_stack(const void* source, std::size_t size) noexcept {
  if (!t_stack_asked && !in_signal_handler()) {
    t_stack_asked = true;
    pthread_attr_t attributes;
    if (pthread_getattr_np(pthread_self(), &attributes) == 0) {
      void* low = nullptr;
      std::size_t length = 0;
      if (pthread_attr_getstack(&attributes, &low, &length) == 0) {
        t_stack_low = reinterpret_cast<std::uintptr_t>(low);
        t_stack_high = t_stack_low + length;
      }
      pthread_attr_destroy(&attributes);
    }
  }
  const char here = 0;
  const auto frame = reinterpret_cast<std::uintptr_t>(&here);
  const auto start = reinterpret_cast<std::uintptr_t>(source);
  // A frame outside the stack (an alternate signal stack, a coroutine's) proves nothing.
  return frame >= t_stack_low && frame < t_stack_high && start >= frame && start <= t_stack_high &&
         size <= t_stack_high - start;
}

}  // namespace

bool read_app_memory(void* destination, const void* source, std::size_t size) noexcept {
  if (size == 0) {
    return true;
  }
  if (on_own_stack(source, size)) {
    std::memcpy(destination, source, size);
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
