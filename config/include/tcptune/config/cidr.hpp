// CIDR prefixes and socket addresses as the matcher sees them.
#pragma once

#include <sys/socket.h>

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "tcptune/config/policy.hpp"
#include "tcptune/config/units.hpp"

namespace tcptune::config {

// An endpoint with v4-mapped IPv6 addresses already turned into IPv4.
struct Endpoint {
  int family = 0;  // 4, 6, or 0 when unknown
  std::array<std::uint8_t, 16> bytes{};
  std::uint16_t port = 0;  // host byte order
};

// "203.0.113.0/24", "2001:db8::/32", or a bare address (a /32 or /128).
// Host bits set below the prefix are an error ("did you mean 10.0.0.0/8?").
Parsed<Cidr> parse_cidr(std::string_view text);
bool cidr_contains(const Cidr& cidr, const Endpoint& endpoint);
std::string format_cidr(const Cidr& cidr);

// From a sockaddr (AF_INET / AF_INET6); family 0 for anything else.
Endpoint endpoint_from_sockaddr(const sockaddr* addr, socklen_t len);
std::string format_endpoint(const Endpoint& endpoint);
// The address is all zeros (0.0.0.0, ::): a socket bound to any address, or not connected.
bool is_unspecified(const Endpoint& endpoint);

}  // namespace tcptune::config
