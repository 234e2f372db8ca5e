// One finding of `tcptune advise`: what the logs show, why, the rule that fixes it and what it
// should gain. Detectors (advise_detectors.hpp) make them; the policy writer and the text and JSON
// outputs read them.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "advise_observations.hpp"

namespace tcptune::cli {

// A rule's match, as narrow as the evidence: the programs, role, service ports and (for clients
// of a single destination) the peer the affected connections share.
struct AdviceScope {
  std::vector<std::string> programs;  // empty: the program is unknown (the peer's log was not given)
  std::string role;                   // "client", "server", or empty for any
  std::vector<std::uint16_t> ports;   // the peer's port for clients, the local one for servers
  std::vector<std::string> peers;     // addresses; only for clients of one or a few destinations
  bool peer_unknown = false;          // no record named the peer
  // Ports left out of the match: in Linux's default ephemeral range, where a server bound to
  // port 0 gets a new one each run, so a rule naming it would not match the next run.
  std::vector<std::uint16_t> ephemeral_ports;

  // "rpc:client:127.0.0.1:4000", for the finding's ID.
  [[nodiscard]] std::string id_part() const;
  // `match = { ... }` (empty when the scope is every socket).
  [[nodiscard]] std::string match_toml() const;
  // "client connections of rpc to 127.0.0.1 port 4000".
  [[nodiscard]] std::string describe() const;
  // A rule name: "rpc-client-4000".
  [[nodiscard]] std::string rule_name() const;
  bool operator==(const AdviceScope&) const = default;
};

// The scope of a set of connections of one program and role.
AdviceScope scope_of(const std::vector<const ObservedConnection*>& connections);

// The same connections seen from their peer: the rule the other end's policy needs (a receiver's
// window, a server's replies). Its program comes from the peer's log when given.
AdviceScope peer_scope_of(const std::vector<const ObservedConnection*>& connections,
                          const std::vector<ObservedConnection>& all);

struct AdviceRule {
  AdviceScope scope;
  // key = value lines, in TOML ("nodelay = \"on\""), in the order written.
  std::vector<std::pair<std::string, std::string>> keys;
};

struct Finding {
  std::string id;          // cause code @ scope: stable for the same evidence
  std::string cause_code;  // nagle-delayed-ack, slow-start-after-idle, ...
  std::string title;
  std::string cause;  // one sentence
  // The evidence, as figures and as words.
  std::uint64_t connections = 0;
  std::uint64_t writes = 0;
  std::vector<std::string> programs;
  std::vector<std::string> roles;
  std::vector<std::string> peers;  // endpoints, "unknown" when a connection's peer is not known
  std::vector<std::uint16_t> ports;
  std::vector<std::string> logs;
  std::vector<std::pair<std::string, double>> figures;  // name, value (units in the name)
  std::string evidence;                                 // the figures in a sentence
  // Which end the fix goes to: "this" (the program whose records show it) or "peer".
  std::string tune = "this";
  bool has_rule = false;  // false: tcptune cannot fix it (loss), or the fix is outside the policy
  AdviceRule rule;
  std::string fix;                        // the fix in words (also where there is no rule: a sysctl, a capability)
  std::string gain;                       // the expected gain in words
  std::string gain_arithmetic;            // how it was computed
  std::vector<std::string> alternatives;  // other fixes, with their cost
  std::string prove;                      // the tcptune ab command; empty when there is nothing to prove
};

// Order and dedupe: sorted text of a set.
std::vector<std::string> sorted_unique(std::vector<std::string> items);

// The evidence common to every detector: counts, programs, roles, peers, ports, logs.
void add_connection_evidence(Finding& finding, const std::vector<const ObservedConnection*>& connections);

// A finding of `cause_code` about `connections`: their evidence, and the ID "CAUSE@SCOPE" from
// their scope (scope_of).
Finding new_finding(std::string cause_code, const std::vector<const ObservedConnection*>& connections);

// "tcptune ab --runs 5 --policy FILE -- PROGRAM ARGS..." for the programs of `scope`.
std::string ab_command(const AdviceScope& scope, const std::string& policy_file);

// "44.1 ms", "0.05 ms", "1.2 s".
std::string format_ms(double milliseconds);

}  // namespace tcptune::cli
