// Every tuning key, once: its TOML name, how the loader reads it, how a rule overlays it on
// [defaults], and how `tcptune check` explains it. The loader's key lists (and their unknown-key
// errors), overlay() and check all follow this table; a new key is an entry here, its Tuning
// field and the shim's code that applies it.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "tcptune/config/buffer_plan.hpp"
#include "tcptune/config/policy.hpp"

namespace tcptune::config {

class TomlWalk;   // the loader's walk over the TOML document (config/src/toml_walk.hpp)
struct TomlNode;  // one of its values

// What the kernel uses for keepalive settings a policy leaves out (net.ipv4.tcp_keepalive_intvl and
// tcp_keepalive_probes); zero when unknown.
struct KeepaliveDefaults {
  Duration interval{};
  int probes = 0;
};

// What `tcptune check` knows about this host, for the explanations that depend on it.
struct HostOutlook {
  BufferLimits rcvbuf;
  BufferLimits sndbuf;
  bool cap_net_admin = false;
  KeepaliveDefaults keepalive;
  // One sentence: will setsockopt(TCP_CONGESTION, algorithm) work for this process?
  std::string (*congestion_outlook)(const std::string& algorithm, bool cap_net_admin) = nullptr;
};

struct TuningKey {
  std::string_view name;  // as the policy writes it, in [defaults] and [[rule]]
  // The key's value into its Tuning field; a mistake is reported through `walk`, at the value.
  void (*read)(TomlWalk& walk, std::string_view name, const TomlNode& value, Tuning& into);
  // A rule's setting over the defaults': replaces it when set (sockopts are appended).
  void (*overlay)(Tuning& into, const Tuning& rule);
  // `tcptune check`'s lines for the key ("  nodelay: on (...)\n"), or "" when it has nothing to say.
  std::string (*explain)(const Tuning& tuning, const HostOutlook& host);
};

// In the order the loader reads them (the first mistake is the one reported) and check explains them.
std::span<const TuningKey> tuning_keys();

}  // namespace tcptune::config
