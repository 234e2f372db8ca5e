#include "callsite.hpp"

#include <cxxabi.h>
#include <dlfcn.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <vector>

#include "errno_saver.hpp"
#include "json_writer.hpp"

namespace tcptune::shim {

namespace {

using BacktraceFn = int (*)(void**, int);
std::atomic<BacktraceFn> g_backtrace{nullptr};

std::vector<std::string> describe(const CallSite& site) {
  Dl_info self{};
  (void)dladdr(reinterpret_cast<void*>(&describe), &self);
  std::vector<std::string> frames;
  for (int i = 0; i < site.depth; ++i) {
    Dl_info info{};
    if (dladdr(site.frames[static_cast<std::size_t>(i)], &info) == 0 || info.dli_fname == nullptr) {
      continue;
    }
    if (info.dli_fbase == self.dli_fbase) {
      continue;  // the shim's own frames: the hook and the capture
    }
    const char* module = info.dli_fname;
    if (const char* slash = std::strrchr(module, '/')) {
      module = slash + 1;
    }
    char text[512];
    const auto offset = reinterpret_cast<std::uintptr_t>(site.frames[static_cast<std::size_t>(i)]) -
                        reinterpret_cast<std::uintptr_t>(info.dli_fbase);
    std::string function;
    if (info.dli_sname != nullptr) {
      int status = 0;
      char* demangled = abi::__cxa_demangle(info.dli_sname, nullptr, nullptr, &status);
      function = status == 0 && demangled != nullptr ? demangled : info.dli_sname;
      std::free(demangled);
    }
    (void)std::snprintf(text, sizeof text, "%s+0x%zx%s%s", module, static_cast<std::size_t>(offset),
                        function.empty() ? "" : " ", function.c_str());
    frames.emplace_back(text);
  }
  return frames;
}

}  // namespace

bool load_unwinder() noexcept {
  static std::once_flag once;
  std::call_once(once, [] {
    const ErrnoSaver saver;
    void* library = dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL);
    if (library != nullptr) {
      g_backtrace.store(reinterpret_cast<BacktraceFn>(dlsym(library, "unw_backtrace")), std::memory_order_release);
    }
  });
  return g_backtrace.load(std::memory_order_acquire) != nullptr;
}

void capture_callsite(CallSite& out) noexcept {
  const BacktraceFn backtrace = g_backtrace.load(std::memory_order_acquire);
  out.depth = backtrace != nullptr ? backtrace(out.frames.data(), static_cast<int>(out.frames.size())) : 0;
  if (out.depth < 0) {
    out.depth = 0;
  }
}

std::string callsite_json(const CallSite& site) {
  telemetry::JsonArray array;
  for (const std::string& frame : describe(site)) {
    std::string quoted;
    telemetry::append_json_string(quoted, frame);
    array.add_raw(quoted);
  }
  return array.str();
}

std::string callsite_text(const CallSite& site) {
  std::string text;
  for (const std::string& frame : describe(site)) {
    text += (text.empty() ? "" : " < ") + frame;
  }
  return text;
}

}  // namespace tcptune::shim
