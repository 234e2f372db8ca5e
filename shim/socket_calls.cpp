#include "socket_calls.hpp"

#include "next_symbols.hpp"

namespace tcptune::shim {

namespace {

constexpr SocketCalls kNextCalls{
    [](int fd, int level, int name, const void* value, socklen_t length) noexcept {
      return next::setsockopt(fd, level, name, value, length);
    },
    [](int fd, int level, int name, void* value, socklen_t* length) noexcept {
      return next::getsockopt(fd, level, name, value, length);
    },
};

constinit std::atomic<const SocketCalls*> g_calls{&kNextCalls};

}  // namespace

const SocketCalls& socket_calls() noexcept {
  return *g_calls.load(std::memory_order_acquire);
}

ScopedSocketCalls::ScopedSocketCalls(const SocketCalls& calls) noexcept
    : previous_(g_calls.exchange(&calls, std::memory_order_acq_rel)) {}

ScopedSocketCalls::~ScopedSocketCalls() {
  g_calls.store(previous_, std::memory_order_release);
}

}  // namespace tcptune::shim
