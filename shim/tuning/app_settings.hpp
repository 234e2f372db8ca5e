// What the tuning core is told about a socket beyond what the kernel says: the options the app
// set itself before the rule was known and the socket buffers it asked for meanwhile, and the
// host's buffer limits. In the shim these come from the descriptor's SocketSlot and /proc/sys;
// a supervisor tuning another process's socket fills them from what it saw of that process.
#pragma once

#include <cstdint>

#include "tcptune/config/buffer_plan.hpp"

namespace tcptune::shim {

// Options the app set itself before the rule was chosen; the policy leaves them alone
// unless it forces them.
enum AppOption : std::uint16_t {
  app_nodelay = 1U << 0,
  app_keepalive = 1U << 1,
  app_congestion = 1U << 2,
  app_user_timeout = 1U << 3,
  app_notsent_lowat = 1U << 4,
  app_thin_linear = 1U << 5,
  app_tos = 1U << 6,
  // SO_RCVBUF / SO_SNDBUF passed straight to the kernel (no rule sizes buffers): reported, so a
  // log shows that the app pins its buffer.
  app_rcvbuf = 1U << 7,
  app_sndbuf = 1U << 8,
  // Not an option: the socket was made by a hooked socket(), so every option the app set on it
  // went through the hooks (and is among these bits): what is not here is the kernel's default.
  options_seen_since_creation = 1U << 15,
};

inline constexpr std::int32_t kNoHeldBuffer = -1;

struct AppSettings {
  std::uint16_t app_options = 0;  // AppOption bits
  // The app's SO_SNDBUF/SO_RCVBUF held back until the rule is known (kNoHeldBuffer: none).
  std::int32_t held_sndbuf = kNoHeldBuffer;
  std::int32_t held_rcvbuf = kNoHeldBuffer;
  // Whether the caller sees the app's waits for input (the preloaded shim does, a supervisor
  // does not): nodelay = "on-wait" needs them to push what Nagle holds back.
  bool sees_waits = true;
  // TCP_NODELAY is known to be off without asking the kernel (a socket made through the hooks
  // whose app did not set it, or accepted from a listener where it is off): "on-wait" then
  // costs no getsockopt.
  bool nodelay_known_off = false;
};

// The host's buffer limits (/proc/sys) and whether this process may exceed them.
struct HostBufferFacts {
  config::BufferLimits rcvbuf;
  config::BufferLimits sndbuf;
  bool cap_net_admin = false;
};

// This network namespace's limits (/proc/sys) and this process's capability. Allocates.
HostBufferFacts read_host_buffer_facts();

}  // namespace tcptune::shim
