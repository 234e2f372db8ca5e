// `tcptune check FILE`: the policy in plain words, with what this host will actually give.
#include <unistd.h>

#include <cstdio>
#include <optional>
#include <string>

#include "commands.hpp"
#include "host_congestion.hpp"
#include "passwd_lookup.hpp"
#include "tcptune/config/buffer_plan.hpp"
#include "tcptune/config/cidr.hpp"
#include "tcptune/config/escape.hpp"
#include "tcptune/config/heartbeat_reach.hpp"
#include "tcptune/config/host_sysctl.hpp"
#include "tcptune/config/keep_warm_outlook.hpp"
#include "tcptune/config/keep_warm_presets.hpp"
#include "tcptune/config/log_destination.hpp"
#include "tcptune/config/policy_loader.hpp"
#include "tcptune/config/rule_shadowing.hpp"
#include "tcptune/config/tuning_keys.hpp"
#include "tcptune/config/units.hpp"

namespace tcptune::cli {

namespace {

std::string join(const std::vector<std::string>& items, const char* separator) {
  std::string out;
  for (const std::string& item : items) {
    out += (out.empty() ? "" : separator) + item;
  }
  return out;
}

std::string describe_match(const config::Match& match) {
  std::string out = match.role == config::Role::client   ? "client connections"
                    : match.role == config::Role::server ? "server sockets (listeners and accepted connections)"
                                                         : "every TCP socket";
  if (!match.peers.empty()) {
    std::vector<std::string> peers;
    for (const config::Cidr& cidr : match.peers) {
      peers.push_back(config::format_cidr(cidr));
    }
    out += (match.role == config::Role::server ? " from " : " to ") + join(peers, " or ");
  }
  if (!match.ports.empty()) {
    std::vector<std::string> ports;
    for (const config::PortRange& range : match.ports) {
      ports.push_back(range.first == range.last ? std::to_string(range.first)
                                                : std::to_string(range.first) + "-" + std::to_string(range.last));
    }
    out += (match.role == config::Role::server ? ", local port " : ", port ") + join(ports, " or ");
  }
  if (!match.programs.empty()) {
    out += ", programs matching " + join(match.programs, " or ");
  }
  return out;
}

// Each key's lines from the table of tuning keys, in its order.
void explain_tuning(const config::Tuning& tuning, const config::HostOutlook& host) {
  bool any = false;
  for (const config::TuningKey& key : config::tuning_keys()) {
    const std::string lines = key.explain(tuning, host);
    any = any || !lines.empty();
    (void)std::fputs(lines.c_str(), stdout);
  }
  if (!any) {
    std::printf("  nothing: these sockets are left alone\n");
  }
}

// What a heartbeat does to a server's clients, for the warnings below.
std::string what_breaks(const std::string& shown_payload) {
  return "tcptune cannot know their protocol, and a byte a client does not expect between replies breaks it (\"" +
         shown_payload +
         "\" after an HTTP/1.1 keep-alive response makes curl fail with \"Received HTTP/0.9\"; a strict RESP "
         "client rejects a reply that starts with it)";
}

// A preset's warning: its bytes are right for clients that speak its protocol, and only for them.
void warn_about_server_preset(const config::Policy& policy, int index) {
  const bool in_defaults = index == config::kDefaultsReach;
  const config::KeepWarm& keep_warm =
      in_defaults ? *policy.defaults.keep_warm : *policy.rules[static_cast<std::size_t>(index)].tuning.keep_warm;
  const config::KeepWarmPreset* preset = config::find_keep_warm_preset(keep_warm.protocol);
  const std::string protocol = preset != nullptr ? std::string(preset->protocol) : keep_warm.protocol;
  const std::string sends = "sends " + keep_warm.protocol + " heartbeats (\"" +
                            config::escape_for_display(keep_warm.payload, true) +
                            "\") on accepted (server-side) sockets of every port";
  if (in_defaults) {
    (void)std::fprintf(stderr,
                       "tcptune: warning: %s: [defaults] has keep_warm, which every rule inherits, so it %s: only "
                       "clients that speak %s ignore them; move keep_warm into a [[rule]] whose match names the ports "
                       "that speak it\n",
                       policy.source.c_str(), sends.c_str(), protocol.c_str());
    return;
  }
  const config::Rule& rule = policy.rules[static_cast<std::size_t>(index)];
  (void)std::fprintf(stderr,
                     "tcptune: warning: %s:%u:%u: rule '%s' %s (its role is \"%s\" and its match names no port): "
                     "only clients that speak %s ignore them; add the ports that speak it to its match, or role = "
                     "\"client\"\n",
                     rule.pos.file.c_str(), rule.pos.line, rule.pos.column, rule.name.c_str(), sends.c_str(),
                     rule.match.role == config::Role::server ? "server" : "any", protocol.c_str());
}

// One line on stderr for each keep_warm that can reach accepted sockets: what breaks, what to do.
void warn_about_server_heartbeats(const config::Policy& policy) {
  for (const int index : config::heartbeats_reaching_accepted_sockets(policy)) {
    const config::KeepWarm& keep_warm = index == config::kDefaultsReach
                                            ? *policy.defaults.keep_warm
                                            : *policy.rules[static_cast<std::size_t>(index)].tuning.keep_warm;
    if (!keep_warm.protocol.empty()) {
      warn_about_server_preset(policy, index);
      continue;
    }
    const std::string payload = config::escape_for_display(keep_warm.payload, true);
    if (index == config::kDefaultsReach) {
      (void)std::fprintf(stderr,
                         "tcptune: warning: %s: [defaults] has keep_warm, which every rule inherits, so it sends "
                         "heartbeats on accepted (server-side) sockets too: %s; move keep_warm into a [[rule]] with "
                         "match = { role = \"client\" } (and the peer's port)\n",
                         policy.source.c_str(), what_breaks(payload).c_str());
      continue;
    }
    const config::Rule& rule = policy.rules[static_cast<std::size_t>(index)];
    (void)std::fprintf(stderr,
                       "tcptune: warning: %s:%u:%u: rule '%s' sends keep_warm heartbeats on accepted (server-side) "
                       "sockets (its role is \"%s\"): %s; add role = \"client\" to its match, unless every client "
                       "of these servers ignores \"%s\"\n",
                       rule.pos.file.c_str(), rule.pos.line, rule.pos.column, rule.name.c_str(),
                       rule.match.role == config::Role::server ? "server" : "any", what_breaks(payload).c_str(),
                       payload.c_str());
  }
}

// A rule after one whose match takes every socket it would: first match wins, so it never applies.
void warn_about_shadowed_rules(const config::Policy& policy) {
  for (const config::ShadowedRule& shadowed : config::shadowed_rules(policy)) {
    const config::Rule& rule = policy.rules[shadowed.rule];
    const config::Rule& by = policy.rules[shadowed.by];
    (void)std::fprintf(stderr,
                       "tcptune: warning: %s:%u:%u: rule '%s' never matches: rule '%s' (line %u) comes first and "
                       "matches every socket it would (first match wins); move it above '%s', or narrow '%s'\n",
                       rule.pos.file.c_str(), rule.pos.line, rule.pos.column, rule.name.c_str(), by.name.c_str(),
                       by.pos.line, by.name.c_str(), by.name.c_str());
  }
}

// keep_warm where this namespace restarts no window after idle: the shim would send nothing.
void warn_about_idle_keep_warm(const config::Policy& policy) {
  const config::IdleRestart host = config::read_idle_restart();
  const char* consequence = "so the shim sends no heartbeat (it checks again at each connection, in its own namespace)";
  if (const std::string why = config::keep_warm_futility(policy.defaults, host); !why.empty()) {
    (void)std::fprintf(stderr, "tcptune: warning: %s: keep_warm in [defaults] does nothing here: %s, %s\n",
                       policy.source.c_str(), why.c_str(), consequence);
  }
  for (const config::Rule& rule : policy.rules) {
    // A rule that sets neither inherits both from [defaults], whose line above says it.
    if (!rule.tuning.keep_warm.has_value() && !rule.tuning.congestion.has_value()) {
      continue;
    }
    if (const std::string why = config::keep_warm_futility(rule.effective, host); !why.empty()) {
      (void)std::fprintf(stderr, "tcptune: warning: %s:%u:%u: keep_warm in rule '%s' does nothing here: %s, %s\n",
                         rule.pos.file.c_str(), rule.pos.line, rule.pos.column, rule.name.c_str(), why.c_str(),
                         consequence);
    }
  }
}

// Whose plan is shown: this process's, or --as-user's (root keeps CAP_NET_ADMIN, others lack it).
std::string privilege_line(const std::optional<PasswdEntry>& user, const config::HostOutlook& host) {
  const char* with = host.cap_net_admin ? "with" : "without";
  if (!user.has_value()) {
    return "as this process (uid " + std::to_string(::geteuid()) + ", " + with +
           " CAP_NET_ADMIN); --as-user USER shows a service user's plan\n";
  }
  return "as user " + user->name + " (uid " + std::to_string(user->uid) + "): " + with + " CAP_NET_ADMIN" +
         (host.cap_net_admin ? " (root's usual capabilities; a unit's CapabilityBoundingSet= can take it away)"
                             : " (unless its unit grants AmbientCapabilities=CAP_NET_ADMIN)") +
         "\n";
}

}  // namespace

int check_command(const CheckOptions& options) {
  const bool builtin = options.policy_file.empty();
  const config::LoadResult loaded =
      builtin ? config::LoadResult{config::builtin_default_policy()} : config::load_policy_file(options.policy_file);
  if (!loaded.ok()) {
    // Every mistake at once, one line each in the file's order: fixing them takes one run.
    for (const config::PolicyError& error : loaded.all_errors()) {
      (void)std::fprintf(stderr, "tcptune: %s\n", error.to_string().c_str());
    }
    return 1;
  }
  std::optional<PasswdEntry> as_user;
  if (!options.as_user.empty()) {
    as_user = find_user(options.as_user);
    if (!as_user.has_value()) {
      (void)std::fprintf(stderr, "tcptune: --as-user %s: no such user in /etc/passwd (a numeric uid also works)\n",
                         options.as_user.c_str());
      return kExitUsage;
    }
  }
  const config::Policy& policy = loaded.policy();
  if (builtin) {
    std::printf(
        "no policy file given: the built-in default, which the shim uses when it finds no policy "
        "(TCPTUNE_POLICY, TCPTUNE_POLICY_TOML, /etc/tcptune/policy.toml)\n");
  }
  config::HostOutlook host;
  host.rcvbuf = config::read_rcvbuf_limits();
  host.sndbuf = config::read_sndbuf_limits();
  // Another user's process has root's capabilities only as root (uid 0).
  host.cap_net_admin = as_user.has_value() ? as_user->uid == 0 : config::has_cap_net_admin();
  host.congestion_outlook = congestion_outlook;
  host.keepalive = config::read_keepalive_defaults();
  std::printf("%s: valid, %zu rule%s (first match wins; a rule's unset keys come from [defaults])\n",
              policy.source.c_str(), policy.rules.size(), policy.rules.size() == 1 ? "" : "s");
  (void)std::fputs(privilege_line(as_user, host).c_str(), stdout);
  for (const config::PolicyError& note : loaded.notes) {
    std::printf("note: %s\n", note.to_string().c_str());
  }
  for (const config::Rule& rule : policy.rules) {
    std::printf("\nrule '%s' (%s:%u): %s\n", rule.name.c_str(), rule.pos.file.c_str(), rule.pos.line,
                describe_match(rule.match).c_str());
    explain_tuning(rule.effective, host);
  }
  std::printf("\n[defaults], for sockets no rule matches:\n");
  explain_tuning(policy.defaults, host);
  if (config::is_stderr_log(policy.log.path)) {
    std::printf(
        "\nlog: each process's own standard error (one write per record, never blocking; records it "
        "cannot take are dropped and counted)\n");
  } else if (!policy.log.path.empty()) {
    std::printf("\nlog: %s ({program} and {pid} are replaced per process)\n", policy.log.path.c_str());
  }
  (void)std::fflush(stdout);  // the report first, then its warnings
  warn_about_server_heartbeats(policy);
  warn_about_shadowed_rules(policy);
  warn_about_idle_keep_warm(policy);
  return 0;
}

}  // namespace tcptune::cli
