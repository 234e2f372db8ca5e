// The options' report of a connection, kept once for every connection that has the same one.
// A rule's options come out the same on most of its connections (the kernel rounds and caps
// alike), and a conn_open handed to the worker then carries a pointer to a report nobody writes
// again instead of a copy of its strings, written by the app's thread and read by the worker's
// for every connection.
#pragma once

#include "option_applier.hpp"

namespace tcptune::shim {

// A report equal to `report` that lives as long as the process and never changes; nullptr once
// kMostInternedReports different ones are kept (the caller then keeps its own). Lock-free; may
// allocate (off the write path, not from a signal handler).
const ApplyReport* intern_report(const ApplyReport& report);

inline constexpr int kMostInternedReports = 64;

}  // namespace tcptune::shim
