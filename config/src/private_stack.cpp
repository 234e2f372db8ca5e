// The switch is getcontext/makecontext/setcontext rather than swapcontext: AddressSanitizer's
// runtime intercepts swapcontext and prints a warning on the app's stderr the first time, also
// when an uninstrumented libtcptune.so calls it inside an instrumented program.
#include "tcptune/config/private_stack.hpp"

#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <vector>

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TCPTUNE_ASAN_FIBERS 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define TCPTUNE_ASAN_FIBERS 1
#endif
#ifdef TCPTUNE_ASAN_FIBERS
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif

// getcontext returns twice (again when the call on the private stack ends): say so, as for
// setjmp, so that no value lives in a register across it. GCC knows it by name; this makes sure.
extern "C" int getcontext(ucontext_t* context) noexcept __attribute__((returns_twice));

namespace tcptune::config {

namespace {

struct Call {
  void (*function)(void*);
  void* argument;
  void* fake_stack = nullptr;  // AddressSanitizer's, of the caller, across the switch
  const void* caller_stack = nullptr;
  std::size_t caller_stack_bytes = 0;
};

static_assert(sizeof(void*) <= sizeof(std::uint64_t));

// makecontext passes int arguments: the Call's address in two halves.
void enter(unsigned high, unsigned low) {
  // NOLINTNEXTLINE(performance-no-int-to-ptr): the address makecontext could only pass as ints
  auto* call = reinterpret_cast<Call*>(static_cast<std::uintptr_t>((std::uint64_t{high} << 32U) | low));
#ifdef TCPTUNE_ASAN_FIBERS
  __sanitizer_finish_switch_fiber(nullptr, &call->caller_stack, &call->caller_stack_bytes);
#endif
  call->function(call->argument);
#ifdef TCPTUNE_ASAN_FIBERS
  __sanitizer_start_switch_fiber(nullptr, call->caller_stack, call->caller_stack_bytes);
#endif
}  // on to uc_link, the caller

class Mapping {
 public:
  Mapping(void* base, std::size_t bytes) : base_(base), bytes_(bytes) {}
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;
  ~Mapping() { (void)::munmap(base_, bytes_); }

 private:
  void* base_;
  std::size_t bytes_;
};

// The bytes from the top of the stack down to the lowest page the call faulted in.
std::size_t touched_bytes(char* stack, std::size_t bytes, std::size_t page) {
  std::vector<unsigned char> resident(bytes / page);
  if (::mincore(stack, bytes, resident.data()) != 0) {
    return bytes;
  }
  for (std::size_t i = 0; i < resident.size(); ++i) {
    if ((resident[i] & 1U) != 0) {
      return bytes - (i * page);
    }
  }
  return 0;
}

}  // namespace

int run_on_private_stack(std::size_t bytes, void (*function)(void*), void* argument, std::size_t* used) {
  const auto page = static_cast<std::size_t>(::getpagesize());
  // The page below the stack stays inaccessible: an overflow faults there instead of writing
  // over whatever is mapped below.
  void* const base = ::mmap(nullptr, bytes + page, PROT_READ | PROT_WRITE,
                            MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
  if (base == MAP_FAILED) {
    return errno;
  }
  const Mapping mapping(base, bytes + page);
  if (::mprotect(base, page, PROT_NONE) != 0) {
    return errno;
  }
  char* const stack = static_cast<char*>(base) + page;

  Call call{function, argument};
  ucontext_t caller{};
  ucontext_t callee{};
  if (getcontext(&callee) != 0) {
    return errno;
  }
  callee.uc_stack.ss_sp = stack;
  callee.uc_stack.ss_size = bytes;
  callee.uc_stack.ss_flags = 0;
  callee.uc_link = &caller;
  const auto address = static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(&call));
  makecontext(&callee, reinterpret_cast<void (*)()>(&enter), 2, static_cast<unsigned>(address >> 32U),
              static_cast<unsigned>(address & 0xFFFFFFFFU));
  volatile bool entered = false;
  if (getcontext(&caller) != 0) {
    return errno;
  }
  int error = 0;
  if (!entered) {  // the first return; the second comes when enter() has returned
    entered = true;
#ifdef TCPTUNE_ASAN_FIBERS
    __sanitizer_start_switch_fiber(&call.fake_stack, stack, bytes);
#endif
    (void)setcontext(&callee);  // returns only when it failed
    error = errno;
  }
#ifdef TCPTUNE_ASAN_FIBERS
  __sanitizer_finish_switch_fiber(call.fake_stack, nullptr, nullptr);
  // Frames left poisoned on the private stack must not outlive it at its address.
  __asan_unpoison_memory_region(stack, bytes);
#endif
  if (error == 0 && used != nullptr) {
    *used = touched_bytes(stack, bytes, page);
  }
  return error;
}

}  // namespace tcptune::config
