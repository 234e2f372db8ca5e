// An option whose effective value differs from the one the policy asked for: conn_open's
// options, each with its status ("capped", "refused", "not_permitted", "unavailable"; logs from
// before that field are read by their note), and TCP_NODELAY asked on or forced but left off
// because the app set it itself. Most fixes are outside the policy: a sysctl, a capability, a
// module; the app's own TCP_NODELAY=0 is overridden by nodelay = "force".
#include <cstdio>
#include <map>
#include <string>
#include <tuple>

#include "advise_detectors.hpp"

namespace tcptune::cli {

namespace {

bool contains(const std::string& text, const char* part) {
  return text.find(part) != std::string::npos;
}

// The option's outcome when it did not take effect as asked, empty when it did.
std::string missed_status(const ObservedOption& option) {
  if (option.name == "nodelay" && (option.requested == "on" || option.requested == "force") &&
      option.effective == "0") {
    return "app_set";  // the app turned it off itself, before or despite the policy
  }
  if (!option.status.empty()) {
    return option.status == "left_alone" ? std::string() : option.status;
  }
  if (contains(option.note, "lacks CAP_NET_ADMIN")) {
    return "not_permitted";
  }
  if (contains(option.note, "not available in this kernel")) {
    return "unavailable";
  }
  if (contains(option.note, " caps it at ") &&
      !contains(option.note, "so autotuning stays on")) {  // left to an autotuning that reaches it is no miss
    return "capped";
  }
  if (contains(option.note, "refused: ")) {
    return "refused";
  }
  return {};
}

std::string sysctl_for(const std::string& option) {
  return option == "rcvbuf" ? "net.core.rmem_max" : "net.core.wmem_max";
}

}  // namespace

void find_options_not_as_requested(const AdviceInput& input, std::vector<Finding>& out) {
  // (program, rule, option, status) -> the connections and the option as the first one reported it
  std::map<std::tuple<std::string, std::string, std::string, std::string>,
           std::pair<std::vector<const ObservedConnection*>, ObservedOption>>
      groups;
  for (const ObservedConnection& connection : input.observations.connections) {
    for (const ObservedOption& option : connection.options) {
      const std::string status = missed_status(option);
      if (!status.empty()) {
        auto& entry = groups[{connection.program, connection.rule, option.name, status}];
        entry.first.push_back(&connection);
        if (entry.first.size() == 1) {
          entry.second = option;
        }
      }
    }
  }
  for (const auto& [key, entry] : groups) {
    const auto& [program, rule, name, status] = key;
    const std::vector<const ObservedConnection*>& connections = entry.first;
    const ObservedOption& option = entry.second;
    Finding finding = new_finding("option-not-as-requested", connections);
    const AdviceScope scope = scope_of(connections);
    finding.id += ":" + name + ":" + status;
    finding.title = name + " of rule '" + rule + "' does not take effect as asked (" + status + ")";
    finding.figures = {{"connections", static_cast<double>(connections.size())}};
    finding.evidence = std::to_string(connections.size()) + " connection(s) of " + program + " under rule '" + rule +
                       "': " + name + " requested \"" + option.requested + "\", effective \"" + option.effective +
                       "\"" + (option.note.empty() ? "" : " (" + option.note + ")");
    finding.gain = "what rule '" + rule + "' was written for, on " + std::to_string(connections.size()) +
                   " connection(s) that do without it now";
    finding.gain_arithmetic =
        "none to compute: the option's effect is the rule's own (measure it with the command "
        "below once the fix is in)";
    finding.prove = ab_command(scope, "POLICY_WITH_RULE_" + rule);
    if (status == "app_set") {
      finding.cause = program + " sets TCP_NODELAY off itself, and nodelay = \"" + option.requested +
                      "\" leaves an app's own choice alone.";
      finding.has_rule = true;
      finding.rule.scope = scope;
      finding.rule.keys = {{"nodelay", "\"force\""}};
      finding.fix = "nodelay = \"force\" for " + scope.describe() +
                    ": the app's TCP_NODELAY=0 and TCP_CORK=1 become no-ops (logged once per connection)";
      finding.prove = ab_command(scope, input.policy_file);
    } else if (status == "capped") {
      finding.cause =
          "a sysctl caps the " + name + " this process may set below what the rule asks (" + option.requested + ").";
      finding.fix = "raise " + sysctl_for(name) + " to at least the requested size (sysctl -w " + sysctl_for(name) +
                    "=BYTES, root in the program's network namespace), or give the program CAP_NET_ADMIN, which "
                    "lets the shim use SO_" +
                    (name == "rcvbuf" ? "RCV" : "SND") + "BUFFORCE";
    } else if (status == "not_permitted") {
      finding.cause = "the kernel refuses " + name + " \"" + option.requested +
                      "\" to this process: it needs a sysctl or a privilege the process lacks.";
      finding.fix = name == "congestion" ? "add " + option.requested +
                                               " to net.ipv4.tcp_allowed_congestion_control (sysctl -w "
                                               "net.ipv4.tcp_allowed_congestion_control=\"$(sysctl -n "
                                               "net.ipv4.tcp_allowed_congestion_control) " +
                                               option.requested + "\", root), or give the program CAP_NET_ADMIN"
                                         : "give the program the privilege the option needs (CAP_NET_ADMIN)";
    } else if (status == "unavailable") {
      finding.cause = name + " \"" + option.requested + "\" is not in this kernel (a module not loaded).";
      finding.fix = name == "congestion" ? "modprobe tcp_" + option.requested +
                                               " (and list it in /etc/modules-load.d/ to keep it after a reboot)"
                                         : "load the module that provides it";
    } else {
      finding.cause = "the kernel refused " + name + " \"" + option.requested + "\" (" + option.note + ").";
      finding.fix = "take " + name + " out of rule '" + rule +
                    "', or change it to a value this kernel accepts (tcptune check explains each key)";
    }
    out.push_back(std::move(finding));
  }
}

}  // namespace tcptune::cli
