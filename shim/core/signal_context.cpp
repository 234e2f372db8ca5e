#include "signal_context.hpp"

#include <pthread.h>

#include <atomic>
#include <cerrno>
#include <cstdint>

#include "app_memory.hpp"
#include "next_symbols.hpp"

namespace tcptune::shim {

namespace {

// The app's handler for each signal, as it last installed it.
struct AppHandler {
  std::atomic<void*> handler{nullptr};
  std::atomic<int> flags{0};
};
AppHandler g_handlers[NSIG];

// Per thread: how many of the app's handlers are running, and where each one's trampoline
// frame is, to notice a handler left by siglongjmp.
constexpr int kTrackedDepth = 8;
struct HandlerFrame {
  std::uintptr_t frame = 0;
  int signal_number = 0;
  bool on_alternate_stack = false;
  bool masks_itself = false;  // no SA_NODEFER: the signal stays blocked while its handler runs
};
thread_local int t_depth = 0;
thread_local HandlerFrame t_frames[kTrackedDepth];

std::atomic<unsigned long> g_untuned{0};

bool running_on_alternate_stack() noexcept {
  const int saved = errno;
  stack_t stack{};
  const bool on = sigaltstack(nullptr, &stack) == 0 && (stack.ss_flags & SS_ONSTACK) != 0;
  errno = saved;
  return on;
}

bool signal_blocked(int signal_number) noexcept {
  const int saved = errno;
  sigset_t mask;
  const bool blocked = pthread_sigmask(SIG_BLOCK, nullptr, &mask) != 0 || sigismember(&mask, signal_number) == 1;
  errno = saved;
  return blocked;
}

void trampoline(int signal_number, siginfo_t* info, void* context) {
  const AppHandler& app = g_handlers[signal_number];
  void* handler = app.handler.load(std::memory_order_acquire);
  const int flags = app.flags.load(std::memory_order_relaxed);
  if (t_depth < kTrackedDepth) {
    t_frames[t_depth] = {reinterpret_cast<std::uintptr_t>(__builtin_frame_address(0)), signal_number,
                         (flags & SA_ONSTACK) != 0 && running_on_alternate_stack(), (flags & SA_NODEFER) == 0};
  }
  ++t_depth;
  // Always with all three arguments, as the kernel itself calls a handler: a one-argument
  // handler ignores the others, and a handler swapped meanwhile never misses its siginfo.
  reinterpret_cast<void (*)(int, siginfo_t*, void*)>(handler)(signal_number, info, context);
  --t_depth;
}

bool is_function(const struct sigaction& action) {
  void* handler = reinterpret_cast<void*>(action.sa_handler);
  return handler != reinterpret_cast<void*>(SIG_DFL) && handler != reinterpret_cast<void*>(SIG_IGN);
}

}  // namespace

bool in_signal_handler() noexcept {
  while (t_depth > 0) {
    if (t_depth > kTrackedDepth) {
      return true;  // deeper than we track: assume still inside
    }
    const HandlerFrame& innermost = t_frames[t_depth - 1];
    bool inside = innermost.on_alternate_stack
                      ? running_on_alternate_stack()
                      : reinterpret_cast<std::uintptr_t>(__builtin_frame_address(0)) < innermost.frame;
    if (inside && innermost.masks_itself) {
      // After siglongjmp the stack may grow deeper than the handler's frame was, but the mask
      // sigsetjmp saved is back: a handler still running keeps its own signal blocked.
      inside = signal_blocked(innermost.signal_number);
    }
    if (inside) {
      return true;
    }
    --t_depth;  // that handler was left by siglongjmp
  }
  return false;
}

int app_sigaction(int signal_number, const struct sigaction* act, struct sigaction* old) noexcept {
  if (signal_number <= 0 || signal_number >= NSIG) {
    return next::sigaction(signal_number, act, old);  // the kernel's EINVAL
  }
  struct sigaction installed {};
  if (act != nullptr) {
    const std::optional<struct sigaction> requested = read_app_object<struct sigaction>(act);
    if (!requested.has_value()) {
      return next::sigaction(signal_number, act, old);  // the kernel's EFAULT
    }
    installed = *requested;
  }
  AppHandler& app = g_handlers[signal_number];
  void* previous_handler = app.handler.load(std::memory_order_acquire);
  const int previous_flags = app.flags.load(std::memory_order_relaxed);
  if (act != nullptr && is_function(installed)) {
    // Published before the kernel switches to the trampoline, so it never runs without it.
    app.flags.store(installed.sa_flags, std::memory_order_relaxed);
    app.handler.store(reinterpret_cast<void*>(installed.sa_sigaction), std::memory_order_release);
    installed.sa_sigaction = trampoline;
    installed.sa_flags |= SA_SIGINFO;
  }
  struct sigaction replaced {};
  const int result = next::sigaction(signal_number, act != nullptr ? &installed : nullptr, &replaced);
  if (result != 0) {
    app.flags.store(previous_flags, std::memory_order_relaxed);
    app.handler.store(previous_handler, std::memory_order_release);
    return result;
  }
  if (replaced.sa_sigaction == trampoline) {
    replaced.sa_sigaction = reinterpret_cast<void (*)(int, siginfo_t*, void*)>(previous_handler);
    replaced.sa_flags = previous_flags;
  }
  if (old != nullptr && !write_app_memory(old, &replaced, sizeof replaced)) {
    if (app_memory_copies_refused()) {
      *old = replaced;  // where the copy is refused: in place, as glibc's sigaction writes it
      return 0;
    }
    errno = EFAULT;  // as the kernel: the new handler is installed, the old one not reported
    return -1;
  }
  return 0;
}

void adopt_installed_handlers(void (*app_view)(int signal_number, struct sigaction* installed)) noexcept {
  const int saved = errno;
  for (int signal_number = 1; signal_number < NSIG; ++signal_number) {
    struct sigaction current {};
    // glibc's own signals answer EINVAL; SIGKILL and SIGSTOP have no handler.
    if (next::sigaction(signal_number, nullptr, &current) != 0 || current.sa_sigaction == trampoline) {
      continue;
    }
    if (app_view != nullptr) {
      app_view(signal_number, &current);
    }
    if (!is_function(current)) {
      continue;
    }
    (void)app_sigaction(signal_number, &current, nullptr);
  }
  errno = saved;
}

unsigned long untuned_in_signal_handlers() noexcept {
  return g_untuned.load(std::memory_order_relaxed);
}

void count_untuned_in_signal_handler() noexcept {
  g_untuned.fetch_add(1, std::memory_order_relaxed);
}

void forget_untuned_in_child() noexcept {
  g_untuned.store(0, std::memory_order_relaxed);
}

}  // namespace tcptune::shim
