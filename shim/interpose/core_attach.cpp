// libtcptune-core.so's one exported function. The first stage (libtcptune.so) dlopens the core
// when the process's first TCP socket appears and calls this once; from then on its hooks call
// the entries returned here. What ran in the single library's constructor runs here.
#include "core_entries.hpp"
#include "core_interface.h"
#include "deferred_destructors.hpp"
#include "next_symbols.hpp"
#include "process_runtime.hpp"
#include "shim_log.hpp"
#include "signal_context.hpp"
#include "telemetry_worker.hpp"

namespace core = tcptune::shim;

extern "C" __attribute__((visibility("default"))) const tcptune_core_entries* tcptune_core_attach(
    const tcptune_stage_services* services) noexcept {
  if (services == nullptr || services->interface_version != TCPTUNE_CORE_INTERFACE_VERSION ||
      services->next_symbol == nullptr) {
    return nullptr;
  }
  // Before any next definition is resolved: this object is not in the global scope, so its own
  // dlsym(RTLD_NEXT) would not answer "after libtcptune.so".
  core::set_next_resolver(services->next_symbol);
  core::set_vfork_count(services->vforks_in_flight);
  core::ensure_initialized();
  // Handlers the program installed before the core was loaded run behind its trampoline too.
  core::adopt_installed_handlers(services->app_view_of_handler);
  return &core::core_entries();
}

namespace {

// Runs at exit (after the program's atexit handlers), wherever exit() was called from; only in
// a process that loaded the core. Its static objects are destroyed after that, not before.
[[gnu::destructor]] void unload_core() {
  core::flush_telemetry_at_exit();
  core::write_waiting_log_lines();  // a log that holds no descriptor, where none was free before
  core::run_deferred_destructors();
}

}  // namespace
