// A TUN device (layer 3, no packet-information header) in the calling thread's network namespace, and the
// interface configuration linkem needs there: a point-to-point IPv4 address with a /32 route to the peer,
// and loopback up. The device lives as long as its file descriptor: if the daemon dies, it vanishes.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace tcptune::linkem {

inline constexpr std::string_view kTunName = "linkem0";
inline constexpr int kTunMtu = 1500;

// Opens /dev/net/tun (nonblocking, close-on-exec) and attaches a new device 'name' to it. -1 on error.
int open_tun(std::string_view name, std::string& error);

struct PointToPoint {
  std::string_view interface;
  std::uint32_t local_address = 0;  // host byte order
  std::uint32_t peer_address = 0;
  int mtu = kTunMtu;
};

// Like `ip addr add LOCAL peer PEER dev IF; ip link set IF mtu MTU up`, plus no IPv6 on it (its router and
// neighbour solicitations would only add strangers' packets to the link).
bool configure_point_to_point(const PointToPoint& link, std::string& error);
bool bring_up(std::string_view interface, std::string& error);

// "198.18.0.1" as a host-order address.
constexpr std::uint32_t ipv4(std::uint8_t a, std::uint8_t b, std::uint8_t c, std::uint8_t d) {
  return (std::uint32_t{a} << 24) | (std::uint32_t{b} << 16) | (std::uint32_t{c} << 8) | d;
}

}  // namespace tcptune::linkem
