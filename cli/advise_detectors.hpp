// The causes `tcptune advise` looks for, one detector each (advise_<cause>.cpp). Each adds a
// finding per group of affected connections (one program, role and service port), and none for
// a healthy program: each threshold is a margin a healthy connection does not come near.
#pragma once

#include <string>
#include <vector>

#include "advise_finding.hpp"
#include "advise_observations.hpp"

namespace tcptune::cli {

struct AdviceInput {
  const Observations& observations;
  std::string policy_file;  // where the advised policy goes, for the `tcptune ab` commands
  std::string heartbeat;    // advise --heartbeat: bytes the peers skip between messages; empty: unknown
};

void find_nagle_delayed_ack(const AdviceInput& input, std::vector<Finding>& out);
void find_slow_start_after_idle(const AdviceInput& input, std::vector<Finding>& out);
void find_window_limits(const AdviceInput& input, std::vector<Finding>& out);
void find_options_not_as_requested(const AdviceInput& input, std::vector<Finding>& out);
void find_resets_after_idle(const AdviceInput& input, std::vector<Finding>& out);
void find_loss_bound(const AdviceInput& input, std::vector<Finding>& out);

// Every detector, findings in a stable order (by ID).
std::vector<Finding> find_all(const AdviceInput& input);

// Connections grouped by program, role and service port, in the order first seen.
std::vector<std::vector<const ObservedConnection*>> group_connections(
    const std::vector<const ObservedConnection*>& connections);

}  // namespace tcptune::cli
