// Reading and writing the app's memory without trusting its pointers. A hook that looked at
// a bad pointer itself would crash the app where the kernel answers EFAULT, so every copy goes
// through process_vm_readv/process_vm_writev on this process: the kernel checks the address
// and the copy fails cleanly. Async-signal-safe (one system call), errno preserved. A read of
// bytes on the calling thread's own stack, above its current frame (memory in use, so mapped:
// a sockaddr in a local variable), is a plain copy, with no system call.
// Where the kernel lacks these calls (before 3.2) or a sandbox refuses them, a read asks the
// kernel whether the bytes are readable (rt_sigprocmask) and then copies them; a write fails,
// and the hook then leaves the call to the kernel untouched.
#pragma once

#include <cstddef>
#include <optional>

namespace tcptune::shim {

// Copies `size` bytes from the app's `source`; false when any of them cannot be read.
bool read_app_memory(void* destination, const void* source, std::size_t size) noexcept;
// Copies `size` bytes to the app's `destination`; false when any of them cannot be written, or
// when process_vm_writev is refused.
bool write_app_memory(void* destination, const void* source, std::size_t size) noexcept;
// Whether process_vm_readv/writev were refused (ENOSYS or EPERM) in this process.
bool app_memory_copies_refused() noexcept;

// The object at the app's `source`, or nothing when it cannot be read.
template <typename T>
std::optional<T> read_app_object(const void* source) noexcept {
  T value{};
  if (source == nullptr || !read_app_memory(&value, source, sizeof value)) {
    return std::nullopt;
  }
  return value;
}

}  // namespace tcptune::shim
