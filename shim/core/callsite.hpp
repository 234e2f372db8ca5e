// Call sites: where the app opened a connection or stalled in a write, as a backtrace taken
// with libunwind. libunwind is loaded with dlopen(RTLD_LOCAL) on first need, never linked: its
// unw_* and _Unwind_* names must not enter the app's global scope, and a process that asks for
// no call sites never maps it.
#pragma once

#include <array>
#include <string>

namespace tcptune::shim {

struct CallSite {
  std::array<void*, 12> frames{};
  int depth = 0;
};

// Loads libunwind once (dlopen: not for the write path). False if it is not installed.
bool load_unwinder() noexcept;
// The current stack, once load_unwinder() has succeeded (depth 0 before). No lock and no
// allocation: libunwind's local unw_backtrace, usable on the write path.
void capture_callsite(CallSite& out) noexcept;
// ["module+0xoffset function", ...] without the shim's own frames; a function name only where
// the module exports one (use addr2line on module+offset for the rest). Off the write path.
std::string callsite_json(const CallSite& site);
std::string callsite_text(const CallSite& site);

}  // namespace tcptune::shim
