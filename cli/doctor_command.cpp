// `tcptune doctor`: this network namespace's settings and what each means for tcptune.
#include <sys/auxv.h>
#include <unistd.h>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "commands.hpp"
#include "host_congestion.hpp"
#include "tcptune/config/host_sysctl.hpp"
#include "tcptune/config/policy_loader.hpp"
#include "tcptune/config/units.hpp"

namespace tcptune::cli {

namespace {

void item(const char* name, const std::string& value, const std::string& meaning) {
  std::printf("%-40s %-28s %s\n", name, value.c_str(), meaning.c_str());
}

std::string sysctl(const char* name) {
  return config::read_sysctl(name).value_or("(unreadable)");
}

}  // namespace

int doctor_command() {
  const bool cap = config::has_cap_net_admin();
  const std::string idle = sysctl("net/ipv4/tcp_slow_start_after_idle");
  item("net.ipv4.tcp_slow_start_after_idle", idle,
       idle == "1" ? "bursts after an idle gap restart from the initial window (extra round trips); "
                     "keep_warm (a heartbeat) or congestion = \"bbr\" avoids it per socket"
                   : "off: idle connections keep their congestion window; keep_warm has nothing to do");
  const std::string default_cc = sysctl("net/ipv4/tcp_congestion_control");
  item("net.ipv4.tcp_congestion_control", default_cc, "the default for new sockets in this namespace");
  const std::string allowed = sysctl("net/ipv4/tcp_allowed_congestion_control");
  item("net.ipv4.tcp_allowed_congestion_control", allowed, "what any process may choose with congestion = ...");
  const std::string available = sysctl("net/ipv4/tcp_available_congestion_control");
  item("net.ipv4.tcp_available_congestion_control", available, "loaded in this kernel");
  item("bbr for this process", listed(available, "bbr") ? "loaded" : "not loaded", congestion_outlook("bbr", cap));
  const config::BufferLimits rcv = config::read_rcvbuf_limits();
  const config::BufferLimits snd = config::read_sndbuf_limits();
  item("net.core.rmem_max", sysctl("net/core/rmem_max"),
       "largest SO_RCVBUF without CAP_NET_ADMIN: " + config::format_size(rcv.core_max) + " (kernel doubles it)");
  item("net.core.wmem_max", sysctl("net/core/wmem_max"),
       "largest SO_SNDBUF without CAP_NET_ADMIN: " + config::format_size(snd.core_max));
  item("net.ipv4.tcp_rmem", sysctl("net/ipv4/tcp_rmem"),
       "receive autotuning starts at " + config::format_size(rcv.autotune_default) + ", can reach " +
           config::format_size(rcv.autotune_max));
  item("net.ipv4.tcp_wmem", sysctl("net/ipv4/tcp_wmem"),
       "send autotuning starts at " + config::format_size(snd.autotune_default) + ", can reach " +
           config::format_size(snd.autotune_max));
  item(
      "CAP_NET_ADMIN", cap ? "yes" : "no",
      cap ? "SO_*BUFFORCE and any congestion control work" : "buffers are capped by *mem_max; only allowed algorithms");
  const config::PolicySource source = config::discover_policy_source(getauxval(AT_SECURE) != 0);
  static constexpr const char* kKinds[] = {"TCPTUNE_POLICY", "TCPTUNE_POLICY_TOML", "/etc/tcptune/policy.toml",
                                           "built-in default"};
  const auto kind = static_cast<std::size_t>(source.kind);
  std::string meaning =
      source.kind == config::PolicySource::Kind::builtin
          ? "nodelay \"on-wait\" for every TCP socket (Nagle on, its held tail pushed when a thread waits for input)"
          : source.path_or_text;
  const config::LoadResult loaded = config::load_discovered(source);
  if (!loaded.ok()) {
    meaning = "INVALID: " + loaded.error().to_string();
  }
  item("policy the shim would load", kKinds[kind], meaning);
  const char* preload = std::getenv("LD_PRELOAD");
  const bool preloaded = preload != nullptr && std::string(preload).find("libtcptune") != std::string::npos;
  item("LD_PRELOAD", preloaded ? "has libtcptune" : "no libtcptune",
       preloaded ? "programs started from here are tuned" : "use `tcptune run -- CMD` or LD_PRELOAD=libtcptune.so");
  return 0;
}

}  // namespace tcptune::cli
