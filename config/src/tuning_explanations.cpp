#include "tuning_explanations.hpp"

#include <cstdio>

#include "tcptune/config/keep_warm_presets.hpp"
#include "tcptune/config/units.hpp"

namespace tcptune::config {

std::string explain_nodelay(const Tuning& tuning, const HostOutlook& /*host*/) {
  if (!tuning.nodelay.has_value()) {
    return {};
  }
  switch (*tuning.nodelay) {
    case NodelayMode::on: return "  nodelay: on (TCP_NODELAY set; the app may turn it off)\n";
    case NodelayMode::force:
      return "  nodelay: force (TCP_NODELAY set; the app's TCP_NODELAY=0 and TCP_CORK=1 become logged no-ops)\n";
    case NodelayMode::off: return "  nodelay: off (Nagle's algorithm stays on)\n";
    case NodelayMode::keep: return "  nodelay: keep (left to the app)\n";
    case NodelayMode::on_wait:
      return "  nodelay: on-wait (Nagle's algorithm stays on, so a stream of small writes is still coalesced; when a "
             "thread that wrote to a socket turns to wait for input (read, recv, poll, epoll, select), the small "
             "segment Nagle holds back is pushed out (TCP_NODELAY set and cleared), so a request or reply is not "
             "held behind the peer's delayed ACK; never on a corked socket, after a MSG_MORE write, or where the app "
             "set TCP_NODELAY itself; supervised programs: left to the program, whose waits are not seen)\n";
  }
  return {};
}

std::string explain_buffers(const Tuning& tuning, const HostOutlook& host) {
  if (!tuning.buffers.has_value()) {
    return {};
  }
  const BufferSpec& spec = *tuning.buffers;
  std::string out;
  auto line = [&](const char* direction, std::optional<std::uint64_t> explicit_size, std::optional<std::uint64_t> bdp,
                  const BufferLimits& limits) {
    if (explicit_size.has_value()) {
      out += "    " + plan_buffer(*explicit_size, true, limits, host.cap_net_admin, direction).reason + "\n";
    } else if (bdp.has_value()) {
      out += "    " + plan_buffer(*bdp, false, limits, host.cap_net_admin, direction).reason + "\n";
    }
  };
  std::optional<std::uint64_t> bdp;
  if (spec.bandwidth_bytes_per_s.has_value() && spec.rtt.has_value()) {
    bdp = bdp_target(*spec.bandwidth_bytes_per_s, *spec.rtt);
    out += "  buffers: bandwidth " + format_rate(*spec.bandwidth_bytes_per_s) + " x rtt " + format_duration(*spec.rtt) +
           " = " + format_size(*bdp) + " (bandwidth-delay product)\n";
  } else if (spec.rtt_auto) {
    out += "  buffers: bandwidth " + format_rate(*spec.bandwidth_bytes_per_s) +
           " x the RTT measured once connected: the send buffer is sized then; the receive buffer stays with "
           "autotuning (its window scale is fixed at the SYN)\n";
  } else {
    out += "  buffers:\n";
  }
  line("rcvbuf", spec.rcvbuf, spec.rtt_auto ? std::nullopt : bdp, host.rcvbuf);
  line("sndbuf", spec.sndbuf, spec.rtt_auto ? std::nullopt : bdp, host.sndbuf);
  if (tuning.override_app_buffers.value_or(false)) {
    out += "    the app's own SO_SNDBUF/SO_RCVBUF calls are ignored (override_app_buffers)\n";
  }
  return out;
}

std::string explain_override_app_buffers(const Tuning& tuning, const HostOutlook& /*host*/) {
  // With buffers, explain_buffers says it.
  if (tuning.buffers.has_value() || !tuning.override_app_buffers.value_or(false)) {
    return {};
  }
  return "  override_app_buffers: the app's own SO_SNDBUF/SO_RCVBUF calls are ignored; autotuning stays on\n";
}

std::string explain_congestion(const Tuning& tuning, const HostOutlook& host) {
  if (!tuning.congestion.has_value()) {
    return {};
  }
  const std::string outlook = host.congestion_outlook != nullptr
                                  ? host.congestion_outlook(*tuning.congestion, host.cap_net_admin)
                                  : *tuning.congestion;
  return "  congestion: " + outlook + "\n";
}

std::string explain_keepalive(const Tuning& tuning, const HostOutlook& host) {
  if (!tuning.keepalive.has_value()) {
    return {};
  }
  const Keepalive& k = *tuning.keepalive;
  // What the policy leaves out is the kernel's (net.ipv4.tcp_keepalive_intvl, tcp_keepalive_probes).
  const Duration interval = k.interval.count() > 0 ? k.interval : host.keepalive.interval;
  const int count = k.count > 0 ? k.count : host.keepalive.probes;
  const std::string interval_text = k.interval.count() > 0 ? format_duration(k.interval)
                                    : interval.count() > 0
                                        ? format_duration(interval) + " (the kernel's net.ipv4.tcp_keepalive_intvl)"
                                        : "the kernel's net.ipv4.tcp_keepalive_intvl";
  const std::string count_text =
      k.count > 0 ? std::to_string(k.count) + " unanswered probe" + (k.count == 1 ? "" : "s")
      : count > 0 ? std::to_string(count) + " unanswered probes (the kernel's net.ipv4.tcp_keepalive_probes)"
                  : "as many unanswered probes as the kernel's net.ipv4.tcp_keepalive_probes";
  std::string out = "  keepalive: first probe after " + format_duration(k.idle) + " idle, then one every " +
                    interval_text + "; the connection is dropped after " + count_text;
  if (interval.count() > 0 && count > 0) {
    out += ", " + format_duration(k.idle + interval * count) + " after it fell silent";
  }
  return out + "\n";
}

std::string explain_user_timeout(const Tuning& tuning, const HostOutlook& /*host*/) {
  if (!tuning.user_timeout.has_value()) {
    return {};
  }
  return "  user_timeout: abort when data stays unacknowledged for " + format_duration(*tuning.user_timeout) + "\n";
}

std::string explain_notsent_lowat(const Tuning& tuning, const HostOutlook& /*host*/) {
  if (!tuning.notsent_lowat.has_value()) {
    return {};
  }
  return "  notsent_lowat: writable only while fewer than " + format_size(*tuning.notsent_lowat) + " are unsent\n";
}

std::string explain_thin_linear_timeouts(const Tuning& tuning, const HostOutlook& /*host*/) {
  if (!tuning.thin_linear_timeouts.has_value()) {
    return {};
  }
  return std::string("  thin_linear_timeouts: ") + (*tuning.thin_linear_timeouts ? "on" : "off") + "\n";
}

std::string explain_quickack(const Tuning& tuning, const HostOutlook& /*host*/) {
  if (!tuning.quickack.value_or(false)) {
    return {};
  }
  return "  quickack: TCP_QUICKACK re-armed after every read\n";
}

std::string explain_tos(const Tuning& tuning, const HostOutlook& /*host*/) {
  if (!tuning.tos.has_value()) {
    return {};
  }
  char hex[8];
  (void)std::snprintf(hex, sizeof hex, "0x%02x", static_cast<unsigned>(*tuning.tos));
  return std::string("  tos: ") + hex + "\n";
}

std::string explain_keep_warm(const Tuning& tuning, const HostOutlook& /*host*/) {
  if (!tuning.keep_warm.has_value()) {
    return {};
  }
  std::string out = "  keep_warm: " + describe_keep_warm(*tuning.keep_warm) + "\n";
  if (const KeepWarmPreset* preset = find_keep_warm_preset(tuning.keep_warm->protocol)) {
    out += "    why the peer ignores it: " + std::string(preset->source) + "\n";
    out += "    message ends followed: the " + std::string(preset->protocol) +
           " framing is followed over the bytes the program writes, and a heartbeat goes only between two "
           "messages; keep-warm ends on a connection whose framing cannot be followed\n";
  } else {
    out +=
        "    message ends guessed: a write call that returns whole is taken to end a message, so a relay or "
        "streaming proxy forwarding a message in parts, or a producer pausing inside one, can get a heartbeat "
        "inside it; a protocol preset follows the protocol's framing instead\n";
  }
  const NodelayMode nodelay = tuning.nodelay.value_or(NodelayMode::keep);
  if (nodelay != NodelayMode::on && nodelay != NodelayMode::force) {
    out +=
        "  keep_warm with Nagle left on: the write that ends the first message after a heartbeat is followed by "
        "TCP_NODELAY set and cleared (two setsockopt calls), so that message's tail does not wait a round trip "
        "for the heartbeat's ACK\n";
  }
  return out;
}

std::string explain_sockopts(const Tuning& tuning, const HostOutlook& /*host*/) {
  std::string out;
  for (const RawSockopt& opt : tuning.sockopts) {
    out += "  sockopt: " + opt.level_name + " " + opt.option_name + " = " + std::to_string(opt.value) + "\n";
  }
  return out;
}

std::string explain_nothing(const Tuning& /*tuning*/, const HostOutlook& /*host*/) {
  return {};
}

}  // namespace tcptune::config
