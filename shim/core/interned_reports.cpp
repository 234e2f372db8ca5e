#include "interned_reports.hpp"

#include <array>
#include <atomic>
#include <memory>

namespace tcptune::shim {

namespace {

// Filled front to back, never emptied: a reader sees a report whole once its slot is set.
constinit std::array<std::atomic<const ApplyReport*>, kMostInternedReports> g_reports{};

}  // namespace

const ApplyReport* intern_report(const ApplyReport& report) {
  std::unique_ptr<const ApplyReport> made;
  for (auto& slot : g_reports) {
    const ApplyReport* kept = slot.load(std::memory_order_acquire);
    if (kept == nullptr) {
      if (!made) {
        made = std::make_unique<const ApplyReport>(report);
      }
      if (slot.compare_exchange_strong(kept, made.get(), std::memory_order_acq_rel)) {
        return made.release();
      }
      // Another thread filled it first (kept now holds its report): compared below.
    }
    if (*kept == report) {
      return kept;
    }
  }
  return nullptr;
}

}  // namespace tcptune::shim
