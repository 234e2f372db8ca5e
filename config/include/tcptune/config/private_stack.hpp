// A call on a stack of a known size: the policy is parsed inside the app, on whatever thread
// loads it first, and the app's stack may be small (ulimit -s, a thread made with a small
// stack). The stack is mapped for the call, with an inaccessible page below it, and unmapped
// after; the switch uses getcontext/makecontext/setcontext (glibc 2.2.5), and no lock, so a
// call from a signal handler is as safe as the allocating work it runs.
#pragma once

#include <cstddef>
#include <exception>
#include <utility>

namespace tcptune::config {

// Runs `function(argument)` on a fresh stack of `bytes` bytes (a multiple of the page size).
// Returns 0, or the errno of the mapping that failed, in which case `function` did not run.
// `function` must not throw. With `used` set, stores how much of the stack the call touched
// (whole pages, from the top).
int run_on_private_stack(std::size_t bytes, void (*function)(void*), void* argument, std::size_t* used = nullptr);

// The same for any callable; an exception it throws is rethrown on the caller's stack.
template <typename Function>
int run_on_private_stack(std::size_t bytes, Function& function, std::size_t* used = nullptr) {
  struct Call {
    Function* function;
    std::exception_ptr failure;
  } call{&function, nullptr};
  const int error = run_on_private_stack(
      bytes,
      [](void* argument) {
        auto* running = static_cast<Call*>(argument);
        try {
          (*running->function)();
        } catch (...) {
          running->failure = std::current_exception();
        }
      },
      &call, used);
  if (call.failure) {
    std::rethrow_exception(call.failure);
  }
  return error;
}

}  // namespace tcptune::config
