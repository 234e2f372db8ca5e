// `tcptune check FILE`: the policy in plain words, with what this host will actually give.
#include <cstdio>
#include <string>

#include "commands.hpp"
#include "host_congestion.hpp"
#include "tcptune/config/buffer_plan.hpp"
#include "tcptune/config/cidr.hpp"
#include "tcptune/config/escape.hpp"
#include "tcptune/config/heartbeat_reach.hpp"
#include "tcptune/config/host_sysctl.hpp"
#include "tcptune/config/keep_warm_presets.hpp"
#include "tcptune/config/policy_loader.hpp"
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

void explain_buffers(const config::BufferSpec& spec, bool override_app) {
  const config::BufferLimits rcv = config::read_rcvbuf_limits();
  const config::BufferLimits snd = config::read_sndbuf_limits();
  const bool cap = config::has_cap_net_admin();
  auto line = [&](const char* direction, std::optional<std::uint64_t> explicit_size, std::optional<std::uint64_t> bdp,
                  const config::BufferLimits& limits) {
    if (explicit_size.has_value()) {
      std::printf("    %s\n", config::plan_buffer(*explicit_size, true, limits, cap, direction).reason.c_str());
    } else if (bdp.has_value()) {
      std::printf("    %s\n", config::plan_buffer(*bdp, false, limits, cap, direction).reason.c_str());
    }
  };
  std::optional<std::uint64_t> bdp;
  if (spec.bandwidth_bytes_per_s.has_value() && spec.rtt.has_value()) {
    bdp = config::bdp_target(*spec.bandwidth_bytes_per_s, *spec.rtt);
    std::printf("  buffers: bandwidth %s x rtt %s = %s (bandwidth-delay product)\n",
                config::format_rate(*spec.bandwidth_bytes_per_s).c_str(), config::format_duration(*spec.rtt).c_str(),
                config::format_size(*bdp).c_str());
  } else if (spec.rtt_auto) {
    std::printf(
        "  buffers: bandwidth %s x the RTT measured once connected: the send buffer is sized then; the "
        "receive buffer stays with autotuning (its window scale is fixed at the SYN)\n",
        config::format_rate(*spec.bandwidth_bytes_per_s).c_str());
  } else {
    std::printf("  buffers:\n");
  }
  line("rcvbuf", spec.rcvbuf, spec.rtt_auto ? std::nullopt : bdp, rcv);
  line("sndbuf", spec.sndbuf, spec.rtt_auto ? std::nullopt : bdp, snd);
  if (override_app) {
    std::printf("    the app's own SO_SNDBUF/SO_RCVBUF calls are ignored (override_app_buffers)\n");
  }
}

void explain_tuning(const config::Tuning& tuning) {
  bool any = false;
  if (tuning.nodelay.has_value()) {
    any = true;
    switch (*tuning.nodelay) {
      case config::NodelayMode::on: std::printf("  nodelay: on (TCP_NODELAY set; the app may turn it off)\n"); break;
      case config::NodelayMode::force:
        std::printf(
            "  nodelay: force (TCP_NODELAY set; the app's TCP_NODELAY=0 and TCP_CORK=1 become logged no-ops)\n");
        break;
      case config::NodelayMode::off: std::printf("  nodelay: off (Nagle's algorithm stays on)\n"); break;
      case config::NodelayMode::keep: std::printf("  nodelay: keep (left to the app)\n"); break;
    }
  }
  if (tuning.buffers.has_value()) {
    any = true;
    explain_buffers(*tuning.buffers, tuning.override_app_buffers.value_or(false));
  } else if (tuning.override_app_buffers.value_or(false)) {
    any = true;
    std::printf("  override_app_buffers: the app's own SO_SNDBUF/SO_RCVBUF calls are ignored; autotuning stays on\n");
  }
  if (tuning.congestion.has_value()) {
    any = true;
    std::printf("  congestion: %s\n", congestion_outlook(*tuning.congestion, config::has_cap_net_admin()).c_str());
  }
  if (tuning.keepalive.has_value()) {
    any = true;
    const auto& k = *tuning.keepalive;
    std::printf("  keepalive: first probe after %s idle, then every %s, %s probes before giving up\n",
                config::format_duration(k.idle).c_str(),
                k.interval.count() > 0 ? config::format_duration(k.interval).c_str() : "kernel default",
                k.count > 0 ? std::to_string(k.count).c_str() : "kernel default");
  }
  if (tuning.user_timeout.has_value()) {
    any = true;
    std::printf("  user_timeout: abort when data stays unacknowledged for %s\n",
                config::format_duration(*tuning.user_timeout).c_str());
  }
  if (tuning.notsent_lowat.has_value()) {
    any = true;
    std::printf("  notsent_lowat: writable only while fewer than %s are unsent\n",
                config::format_size(*tuning.notsent_lowat).c_str());
  }
  if (tuning.thin_linear_timeouts.has_value()) {
    any = true;
    std::printf("  thin_linear_timeouts: %s\n", *tuning.thin_linear_timeouts ? "on" : "off");
  }
  if (tuning.quickack.value_or(false)) {
    any = true;
    std::printf("  quickack: TCP_QUICKACK re-armed after every read\n");
  }
  if (tuning.tos.has_value()) {
    any = true;
    std::printf("  tos: 0x%02x\n", static_cast<unsigned>(*tuning.tos));
  }
  if (tuning.keep_warm.has_value()) {
    any = true;
    std::printf("  keep_warm: %s\n", config::describe_keep_warm(*tuning.keep_warm).c_str());
    if (const config::KeepWarmPreset* preset = config::find_keep_warm_preset(tuning.keep_warm->protocol)) {
      std::printf("    why the peer ignores it: %s\n", std::string(preset->source).c_str());
    }
    const config::NodelayMode nodelay = tuning.nodelay.value_or(config::NodelayMode::keep);
    if (nodelay != config::NodelayMode::on && nodelay != config::NodelayMode::force) {
      std::printf(
          "  keep_warm with Nagle left on: the write that ends the first message after a heartbeat is followed by "
          "TCP_NODELAY set and cleared (two setsockopt calls), so that message's tail does not wait a round trip "
          "for the heartbeat's ACK\n");
    }
  }
  for (const config::RawSockopt& opt : tuning.sockopts) {
    any = true;
    std::printf("  sockopt: %s %s = %d\n", opt.level_name.c_str(), opt.option_name.c_str(), opt.value);
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

}  // namespace

int check_command(const CheckOptions& options) {
  const config::LoadResult loaded = config::load_policy_file(options.policy_file);
  if (!loaded.ok()) {
    (void)std::fprintf(stderr, "tcptune: %s\n", loaded.error().to_string().c_str());
    return 1;
  }
  const config::Policy& policy = loaded.policy();
  std::printf("%s: valid, %zu rule%s (first match wins; a rule's unset keys come from [defaults])\n",
              policy.source.c_str(), policy.rules.size(), policy.rules.size() == 1 ? "" : "s");
  for (const config::Rule& rule : policy.rules) {
    std::printf("\nrule '%s' (%s:%u): %s\n", rule.name.c_str(), rule.pos.file.c_str(), rule.pos.line,
                describe_match(rule.match).c_str());
    explain_tuning(rule.effective);
  }
  std::printf("\n[defaults], for sockets no rule matches:\n");
  explain_tuning(policy.defaults);
  if (!policy.log.path.empty()) {
    std::printf("\nlog: %s ({program} and {pid} are replaced per process)\n", policy.log.path.c_str());
  }
  (void)std::fflush(stdout);  // the report first, then its warnings
  warn_about_server_heartbeats(policy);
  return 0;
}

}  // namespace tcptune::cli
