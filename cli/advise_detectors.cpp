#include "advise_detectors.hpp"

#include <algorithm>
#include <map>
#include <tuple>

namespace tcptune::cli {

std::vector<std::vector<const ObservedConnection*>> group_connections(
    const std::vector<const ObservedConnection*>& connections) {
  std::vector<std::vector<const ObservedConnection*>> groups;
  std::map<std::tuple<std::string, std::string, std::uint16_t>, std::size_t> index;
  for (const ObservedConnection* connection : connections) {
    const auto key = std::make_tuple(connection->program, connection->role, connection->service_port());
    const auto [found, added] = index.emplace(key, groups.size());
    if (added) {
      groups.emplace_back();
    }
    groups[found->second].push_back(connection);
  }
  return groups;
}

std::vector<Finding> find_all(const AdviceInput& input) {
  std::vector<Finding> findings;
  find_nagle_delayed_ack(input, findings);
  find_slow_start_after_idle(input, findings);
  find_window_limits(input, findings);
  find_options_not_as_requested(input, findings);
  find_resets_after_idle(input, findings);
  find_loss_bound(input, findings);
  std::stable_sort(findings.begin(), findings.end(), [](const Finding& a, const Finding& b) { return a.id < b.id; });
  return findings;
}

}  // namespace tcptune::cli
