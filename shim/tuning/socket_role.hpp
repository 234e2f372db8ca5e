// What a socket is to the program: the side that connected, a listener, or a connection a
// listener accepted.
#pragma once

#include <cstdint>

namespace tcptune::shim {

enum class SocketRole : std::uint8_t { unknown, client, listener, server };

// The role as the log names it.
constexpr const char* role_name(SocketRole role) {
  switch (role) {
    case SocketRole::client: return "client";
    case SocketRole::listener: return "listener";
    case SocketRole::server: return "server";
    case SocketRole::unknown: return "unknown";
  }
  return "unknown";
}

}  // namespace tcptune::shim
