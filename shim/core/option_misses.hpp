// Options a rule asked for that did not take effect as asked (refused, not permitted,
// unavailable, capped), counted per rule, option and outcome for the Prometheus textfile. Counted
// on the app's setup path (socket, connect, accept), so lock-free and without allocation: a
// small fixed table, where a rare combination beyond its size is not counted.
#pragma once

#include <cstdint>
#include <vector>

#include "option_applier.hpp"
#include "prometheus_textfile.hpp"
#include "tcptune/config/policy.hpp"

namespace tcptune::shim {

// Counts each option of `report` that missed (OptionReport::missed), under `rule`. Lock-free; async-signal-safe.
void count_option_misses(int rule, const ApplyReport& report) noexcept;

// The counts so far, for the textfile (the worker's thread).
std::vector<telemetry::OptionMiss> option_misses(const config::Policy& policy);

// A forked child counts its own connections from zero.
void option_misses_after_fork_in_child() noexcept;

}  // namespace tcptune::shim
