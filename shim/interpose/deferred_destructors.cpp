// The core's static objects are constructed when the first stage dlopens it, after the program
// has started, so glibc would run their destructors (registered with __cxa_atexit) at exit
// before the atexit handlers the program registered earlier, whose socket calls still reach the
// core, and before the core's destructor has stopped its worker thread, which uses them. The
// core is linked with --wrap=__cxa_atexit (shim/CMakeLists.txt): its registrations, libstdc++'s
// included, are kept here and run by the core's destructor after the flush, as they ran when
// the shim was one library loaded with the program.
#include "deferred_destructors.hpp"

#include <atomic>
#include <cstddef>

namespace {

struct Destructor {
  void (*function)(void*) = nullptr;
  void* object = nullptr;
  std::atomic<bool> ready{false};
};

// Far more than the core registers; past it an object is simply never destroyed.
constexpr std::size_t kCapacity = 512;
Destructor g_destructors[kCapacity];
std::atomic<std::size_t> g_registered{0};
std::atomic<bool> g_ran{false};

}  // namespace

// NOLINTNEXTLINE(readability-identifier-naming): the name --wrap gives __cxa_atexit.
extern "C" int __wrap___cxa_atexit(void (*function)(void*), void* object, void* /*dso*/) noexcept {
  const std::size_t slot = g_registered.fetch_add(1, std::memory_order_relaxed);
  if (slot < kCapacity) {
    g_destructors[slot].function = function;
    g_destructors[slot].object = object;
    g_destructors[slot].ready.store(true, std::memory_order_release);
  }
  return 0;
}

namespace tcptune::shim {

void run_deferred_destructors() noexcept {
  if (g_ran.exchange(true, std::memory_order_acq_rel)) {
    return;
  }
  std::size_t count = g_registered.load(std::memory_order_acquire);
  count = count < kCapacity ? count : kCapacity;
  while (count > 0) {
    Destructor& destructor = g_destructors[--count];
    if (destructor.ready.load(std::memory_order_acquire)) {
      destructor.function(destructor.object);
    }
  }
}

}  // namespace tcptune::shim
