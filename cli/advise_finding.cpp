#include "advise_finding.hpp"

#include <algorithm>
#include <cstdio>
#include <set>
#include <utility>

#include "advise_toml.hpp"

namespace tcptune::cli {

namespace {

// Up to this many destinations a client rule names them; more is a pattern of the program, not
// of a destination, and the rule matches by port.
constexpr std::size_t kMostPeersNamed = 4;
constexpr std::size_t kMostPortsNamed = 8;
// net.ipv4.ip_local_port_range's default: the ports the kernel picks for port 0.
constexpr std::uint16_t kEphemeralFirst = 32768;
constexpr std::uint16_t kEphemeralLast = 60999;

std::string join(const std::vector<std::string>& items, const char* separator) {
  std::string out;
  for (const std::string& item : items) {
    out += (out.empty() ? "" : separator) + item;
  }
  return out;
}

std::vector<std::string> port_texts(const std::vector<std::uint16_t>& ports) {
  std::vector<std::string> out;
  for (const std::uint16_t port : ports) {
    out.push_back(std::to_string(port));
  }
  return out;
}

// Scope of connections seen from `pick`'s view of them (the connection itself, or its peer).
AdviceScope build_scope(const std::vector<std::string>& programs, const std::string& role,
                        const std::vector<std::uint16_t>& ports_seen, const std::vector<std::string>& peers_seen,
                        bool any_unknown) {
  AdviceScope scope;
  scope.programs = sorted_unique(programs);
  scope.role = role;
  std::set<std::uint16_t> ports(ports_seen.begin(), ports_seen.end());
  ports.erase(0);
  for (auto port = ports.begin(); port != ports.end();) {
    if (*port >= kEphemeralFirst && *port <= kEphemeralLast) {
      scope.ephemeral_ports.push_back(*port);
      port = ports.erase(port);
    } else {
      ++port;
    }
  }
  if (!any_unknown && !ports.empty() && ports.size() <= kMostPortsNamed) {
    scope.ports.assign(ports.begin(), ports.end());
  }
  const std::vector<std::string> peers = sorted_unique(peers_seen);
  if (role == "client" && !any_unknown && !peers.empty() && peers.size() <= kMostPeersNamed) {
    scope.peers = peers;
  }
  scope.peer_unknown = any_unknown;
  return scope;
}

}  // namespace

std::vector<std::string> sorted_unique(std::vector<std::string> items) {
  items.erase(std::remove(items.begin(), items.end(), std::string()), items.end());
  std::sort(items.begin(), items.end());
  items.erase(std::unique(items.begin(), items.end()), items.end());
  return items;
}

std::string AdviceScope::id_part() const {
  std::string out = programs.empty() ? "(peer)" : join(programs, ",");
  out += ":" + (role.empty() ? std::string("any") : role);
  if (!peers.empty()) {
    out += ":" + join(peers, ",");
  }
  if (!ports.empty()) {
    out += ":" + join(port_texts(ports), ",");
  }
  return out;
}

std::string AdviceScope::match_toml() const {
  std::vector<std::string> parts;
  if (!peers.empty()) {
    std::vector<std::string> quoted;
    for (const std::string& peer : peers) {
      quoted.push_back(toml_string(peer));
    }
    parts.push_back("peer = " + (quoted.size() == 1 ? quoted.front() : "[" + join(quoted, ", ") + "]"));
  }
  if (!ports.empty()) {
    const std::vector<std::string> texts = port_texts(ports);
    parts.push_back("port = " + (texts.size() == 1 ? texts.front() : "[" + join(texts, ", ") + "]"));
  }
  if (!role.empty()) {
    parts.push_back("role = " + toml_string(role));
  }
  if (!programs.empty()) {
    std::vector<std::string> globs;
    for (const std::string& program : programs) {
      globs.push_back(toml_string(literal_glob(program)));
    }
    parts.push_back("program = " + (globs.size() == 1 ? globs.front() : "[" + join(globs, ", ") + "]"));
  }
  return parts.empty() ? std::string() : "{ " + join(parts, ", ") + " }";
}

std::string AdviceScope::describe() const {
  std::string out = role == "client" ? "client connections" : role == "server" ? "server connections" : "connections";
  out += programs.empty() ? " of the peer's program" : " of " + join(programs, ", ");
  if (!peers.empty()) {
    out += " to " + join(peers, " or ");
  }
  if (!ports.empty()) {
    out += (role == "server" ? ", local port " : ", port ") + join(port_texts(ports), " or ");
  }
  if (!ephemeral_ports.empty()) {
    out += " (port " + join(port_texts(ephemeral_ports), ", ") +
           " left out: in the ephemeral range 32768-60999, where a port is picked anew each run)";
  }
  if (peer_unknown) {
    out += " (peer unknown: the records do not name it, so the rule cannot be narrower)";
  }
  return out;
}

std::string AdviceScope::rule_name() const {
  std::string out = programs.empty() ? "peer" : programs.front();
  for (char& c : out) {
    const bool plain =
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.';
    c = plain ? c : '_';
  }
  out += "-" + (role.empty() ? std::string("any") : role);
  if (!ports.empty()) {
    out += "-" + std::to_string(ports.front());
  }
  return out;
}

AdviceScope scope_of(const std::vector<const ObservedConnection*>& connections) {
  std::vector<std::string> programs;
  std::vector<std::uint16_t> ports;
  std::vector<std::string> peers;
  std::set<std::string> roles;
  bool unknown = false;
  for (const ObservedConnection* connection : connections) {
    programs.push_back(connection->program);
    roles.insert(connection->role);
    const std::uint16_t port = connection->service_port();
    ports.push_back(port);
    peers.push_back(connection->peer_address());
    unknown = unknown || port == 0 || (connection->role == "client" && connection->peer.empty());
  }
  const std::string role =
      roles.size() == 1 && (*roles.begin() == "client" || *roles.begin() == "server") ? *roles.begin() : std::string();
  return build_scope(programs, role, ports, peers, unknown);
}

AdviceScope peer_scope_of(const std::vector<const ObservedConnection*>& connections,
                          const std::vector<ObservedConnection>& all) {
  std::vector<std::string> programs;
  std::vector<std::uint16_t> ports;
  std::vector<std::string> peers;
  std::set<std::string> roles;
  bool unknown = false;
  bool program_unknown = false;
  for (const ObservedConnection* connection : connections) {
    // A client's peer is a server on the peer's port; a server's peer is a client of this
    // server's address and port.
    const bool client = connection->role == "client";
    roles.insert(client ? "server" : connection->role == "server" ? "client" : "");
    ports.push_back(connection->service_port());
    peers.push_back(client ? std::string() : endpoint_address(connection->local));
    unknown = unknown || connection->service_port() == 0 || connection->peer.empty();
    if (connection->counterpart.has_value()) {
      programs.push_back(all[*connection->counterpart].program);
    } else {
      program_unknown = true;
    }
  }
  const std::string role = roles.size() == 1 ? *roles.begin() : std::string();
  AdviceScope scope = build_scope(program_unknown ? std::vector<std::string>{} : programs, role, ports, peers, unknown);
  return scope;
}

void add_connection_evidence(Finding& finding, const std::vector<const ObservedConnection*>& connections) {
  std::vector<std::string> programs;
  std::vector<std::string> roles;
  std::vector<std::string> peers;
  std::vector<std::string> logs;
  std::set<std::uint16_t> ports;
  for (const ObservedConnection* connection : connections) {
    ++finding.connections;
    finding.writes += connection->writes;
    programs.push_back(connection->program);
    roles.push_back(connection->role);
    peers.push_back(connection->peer.empty() ? "unknown" : connection->peer);
    logs.push_back(connection->file);
    if (connection->service_port() != 0) {
      ports.insert(connection->service_port());
    }
  }
  finding.programs = sorted_unique(programs);
  finding.roles = sorted_unique(roles);
  finding.peers = sorted_unique(peers);
  finding.logs = sorted_unique(logs);
  finding.ports.assign(ports.begin(), ports.end());
}

std::string ab_command(const AdviceScope& scope, const std::string& policy_file) {
  const std::string program = scope.programs.empty() ? "PEER_PROGRAM" : scope.programs.front();
  return "tcptune ab --runs 5 --policy " + policy_file + " -- " + program + " ARGS...";
}

std::string format_ms(double milliseconds) {
  char text[48];
  if (milliseconds >= 10000) {
    (void)std::snprintf(text, sizeof text, "%.1f s", milliseconds / 1000);
  } else if (milliseconds >= 100) {
    (void)std::snprintf(text, sizeof text, "%.0f ms", milliseconds);
  } else if (milliseconds >= 1) {
    (void)std::snprintf(text, sizeof text, "%.1f ms", milliseconds);
  } else {
    (void)std::snprintf(text, sizeof text, "%.3f ms", milliseconds);
  }
  return text;
}

Finding new_finding(std::string cause_code, const std::vector<const ObservedConnection*>& connections) {
  Finding finding;
  finding.cause_code = std::move(cause_code);
  add_connection_evidence(finding, connections);
  finding.id = finding.cause_code + "@" + scope_of(connections).id_part();
  return finding;
}

}  // namespace tcptune::cli
