// The next definition (dlsym(RTLD_NEXT)) of each interposed libc function, generated from
// hook_table.def and called as next::name(...); resolved once, lock-free and thread-safe.
// Resolution is eager when the core initialises and lazy when a call comes first. In the
// preloaded process the first stage (libtcptune.so) resolves each name for the core, which it
// loads privately (dlsym(RTLD_NEXT) answers relative to its caller, and the core is not in the
// global scope): set_next_resolver(). A symbol that cannot be resolved falls back to the raw
// system call, so a hook never recurses into itself.
#pragma once

#include <aio.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cstdarg>
#include <cstdio>
#include <cstdlib>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <type_traits>

#include "fortified_declarations.h"

namespace tcptune::shim {

// Where next definitions come from: dlsym(RTLD_NEXT) from this object until a resolver is set
// (unit tests link the core into the test program, and that lookup is right there).
using NextResolver = void* (*)(const char* name);
void set_next_resolver(NextResolver resolver) noexcept;
void* resolve_next_symbol(const char* name) noexcept;

template <typename Fn>
class NextSymbol {
 public:
  constexpr NextSymbol(const char* name, Fn* fallback) : name_(name), fallback_(fallback) {}

  Fn* get() noexcept {
    Fn* fn = fn_.load(std::memory_order_acquire);
    if (fn == nullptr) [[unlikely]] {
      fn = resolve();
    }
    return fn;
  }
  // Idempotent, preserves errno. Racing threads store the same pointer.
  Fn* resolve() noexcept {
    const int saved_errno = errno;
    void* symbol = resolve_next_symbol(name_);
    Fn* fn = symbol != nullptr ? reinterpret_cast<Fn*>(symbol) : fallback_;
    fn_.store(fn, std::memory_order_release);
    errno = saved_errno;
    return fn;
  }

 private:
  const char* name_;
  Fn* fallback_;
  std::atomic<Fn*> fn_{nullptr};
};

// libc's prototype of an interposed function without its exception specification (glibc
// marks the functions that are not cancellation points noexcept) and, under clang, without
// noreturn (_exit), which clang makes part of the type: the fallbacks and the call sites use
// the plain function type. Deduced through a function pointer conversion, which drops both.
template <typename R, typename... Args>
R (*plain_function_of(R (*)(Args...)))
(Args...);
template <typename R, typename... Args>
R (*plain_function_of(R (*)(Args..., ...)))
(Args..., ...);
template <typename Fn>
using LibcFunction = std::remove_pointer_t<decltype(plain_function_of(static_cast<Fn*>(nullptr)))>;

// glibc's prototypes carry attributes (access, warn_unused_result) that a function type used
// as a template argument drops, as it should here.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wignored-attributes"
// The table's macro arguments are names (declared, quoted, qualified): no parentheses.
// NOLINTBEGIN(bugprone-macro-parentheses)

// The next definition of every function in hook_table.def, a member named after it.
struct NextSymbols {
#define TCPTUNE_HOOK_NEXT(name, fallback) NextSymbol<LibcFunction<decltype(::name)>> name;
#include "hook_table.def"
};

NextSymbols& next_symbols() noexcept;
void resolve_all_next_symbols() noexcept;

// A call of one next definition with libc's own parameter types, so arguments convert at the
// call site as in a call of the libc function.
template <typename Fn, NextSymbol<Fn> NextSymbols::*symbol>
struct NextCall;
template <typename R, typename... Args, NextSymbol<R(Args...)> NextSymbols::*symbol>
struct NextCall<R(Args...), symbol> {
  R operator()(Args... args) const { return (next_symbols().*symbol).get()(args...); }
};
// A variadic function (fcntl): the trailing arguments are passed on as they are given.
template <typename R, typename... Args, NextSymbol<R(Args..., ...)> NextSymbols::*symbol>
struct NextCall<R(Args..., ...), symbol> {
  template <typename... Rest>
  R operator()(Args... args, Rest... rest) const {
    return (next_symbols().*symbol).get()(args..., rest...);
  }
};

// next::write(fd, buf, n) calls the next definition of write(): what the hooks forward to, and
// what the core uses for its own calls, so that other interposers later in the chain see them.
namespace next {
#define TCPTUNE_HOOK_NEXT(name, fallback) \
  inline constexpr NextCall<LibcFunction<decltype(::name)>, &NextSymbols::name> name{};
#include "hook_table.def"
}  // namespace next

// NOLINTEND(bugprone-macro-parentheses)
#pragma GCC diagnostic pop

}  // namespace tcptune::shim
