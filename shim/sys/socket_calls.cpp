#include "socket_calls.hpp"

#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>

namespace tcptune::shim {

namespace {

// syscall(2) rather than libc's wrappers: nothing interposed on them can be reached from here.
constexpr SocketCalls kSystemCalls{
    [](int fd, int level, int name, const void* value, socklen_t length) noexcept {
      return static_cast<int>(syscall(SYS_setsockopt, fd, level, name, value, length));
    },
    [](int fd, int level, int name, void* value, socklen_t* length) noexcept {
      return static_cast<int>(syscall(SYS_getsockopt, fd, level, name, value, length));
    },
};

constinit std::atomic<const SocketCalls*> g_calls{&kSystemCalls};

}  // namespace

const SocketCalls& socket_calls() noexcept {
  return *g_calls.load(std::memory_order_acquire);
}

void install_socket_calls(const SocketCalls& calls) noexcept {
  g_calls.store(&calls, std::memory_order_release);
}

ScopedSocketCalls::ScopedSocketCalls(const SocketCalls& calls) noexcept
    : previous_(g_calls.exchange(&calls, std::memory_order_acq_rel)) {}

ScopedSocketCalls::~ScopedSocketCalls() {
  g_calls.store(previous_, std::memory_order_release);
}

}  // namespace tcptune::shim
