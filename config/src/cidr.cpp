#include "tcptune/config/cidr.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

namespace tcptune::config {

namespace {
int address_bytes(int family) {
  return family == 4 ? 4 : 16;
}

bool bit_set(const std::array<std::uint8_t, 16>& bytes, int bit) {
  return ((bytes[static_cast<std::size_t>(bit / 8)] >> (7 - bit % 8)) & 1U) != 0;
}

Parsed<Cidr> cidr_error(std::string message) {
  return Parsed<Cidr>{std::variant<Cidr, std::string>(std::in_place_index<1>, std::move(message))};
}
}  // namespace

Parsed<Cidr> parse_cidr(std::string_view text) {
  const std::string whole(text);
  const std::size_t slash = whole.find('/');
  const std::string address = whole.substr(0, slash);
  Cidr cidr;
  if (inet_pton(AF_INET, address.c_str(), cidr.bytes.data()) == 1) {
    cidr.family = 4;
  } else if (inet_pton(AF_INET6, address.c_str(), cidr.bytes.data()) == 1) {
    cidr.family = 6;
    static constexpr std::uint8_t kMapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    if (std::memcmp(cidr.bytes.data(), kMapped, sizeof kMapped) == 0) {
      return cidr_error("\"" + whole + "\" is a v4-mapped address; write it as IPv4 (it matches v4-mapped peers too)");
    }
  } else {
    return cidr_error("\"" + whole + "\" is not an IPv4 or IPv6 address or CIDR prefix");
  }
  const int max_len = address_bytes(cidr.family) * 8;
  cidr.prefix_len = max_len;
  if (slash != std::string::npos) {
    const std::string length = whole.substr(slash + 1);
    char* end = nullptr;
    const long value = std::strtol(length.c_str(), &end, 10);
    if (length.empty() || *end != '\0' || value < 0 || value > max_len) {
      return cidr_error("\"" + whole + "\": prefix length must be 0.." + std::to_string(max_len));
    }
    cidr.prefix_len = static_cast<int>(value);
  }
  for (int bit = cidr.prefix_len; bit < max_len; ++bit) {
    if (bit_set(cidr.bytes, bit)) {
      Cidr network = cidr;
      for (int b = cidr.prefix_len; b < max_len; ++b) {
        network.bytes[static_cast<std::size_t>(b / 8)] &= static_cast<std::uint8_t>(~(1U << (7 - b % 8)));
      }
      return cidr_error("\"" + whole + "\" has host bits set; did you mean \"" + format_cidr(network) + "\"?");
    }
  }
  return Parsed<Cidr>{std::variant<Cidr, std::string>(std::in_place_index<0>, cidr)};
}

bool cidr_contains(const Cidr& cidr, const Endpoint& endpoint) {
  if (endpoint.family != cidr.family) {
    return false;
  }
  const int full_bytes = cidr.prefix_len / 8;
  if (std::memcmp(cidr.bytes.data(), endpoint.bytes.data(), static_cast<std::size_t>(full_bytes)) != 0) {
    return false;
  }
  const int rest = cidr.prefix_len % 8;
  if (rest == 0) {
    return true;
  }
  const auto mask = static_cast<std::uint8_t>(0xFFU << (8 - rest));
  const auto index = static_cast<std::size_t>(full_bytes);
  return (cidr.bytes[index] & mask) == (endpoint.bytes[index] & mask);
}

std::string format_cidr(const Cidr& cidr) {
  char text[INET6_ADDRSTRLEN] = {};
  inet_ntop(cidr.family == 4 ? AF_INET : AF_INET6, cidr.bytes.data(), text, sizeof text);
  return std::string(text) + "/" + std::to_string(cidr.prefix_len);
}

Endpoint endpoint_from_sockaddr(const sockaddr* addr, socklen_t len) {
  Endpoint endpoint;
  if (addr == nullptr) {
    return endpoint;
  }
  if (addr->sa_family == AF_INET && len >= static_cast<socklen_t>(sizeof(sockaddr_in))) {
    sockaddr_in in{};
    std::memcpy(&in, addr, sizeof in);
    endpoint.family = 4;
    std::memcpy(endpoint.bytes.data(), &in.sin_addr, 4);
    endpoint.port = ntohs(in.sin_port);
  } else if (addr->sa_family == AF_INET6 && len >= static_cast<socklen_t>(sizeof(sockaddr_in6))) {
    sockaddr_in6 in6{};
    std::memcpy(&in6, addr, sizeof in6);
    endpoint.port = ntohs(in6.sin6_port);
    if (IN6_IS_ADDR_V4MAPPED(&in6.sin6_addr)) {
      endpoint.family = 4;
      std::memcpy(endpoint.bytes.data(), reinterpret_cast<const std::uint8_t*>(&in6.sin6_addr) + 12, 4);
    } else {
      endpoint.family = 6;
      std::memcpy(endpoint.bytes.data(), &in6.sin6_addr, 16);
    }
  }
  return endpoint;
}

std::string format_endpoint(const Endpoint& endpoint) {
  if (endpoint.family == 0) {
    return "?";
  }
  char text[INET6_ADDRSTRLEN] = {};
  inet_ntop(endpoint.family == 4 ? AF_INET : AF_INET6, endpoint.bytes.data(), text, sizeof text);
  const std::string port = std::to_string(endpoint.port);
  return endpoint.family == 4 ? std::string(text) + ":" + port : "[" + std::string(text) + "]:" + port;
}

bool is_unspecified(const Endpoint& endpoint) {
  return std::all_of(endpoint.bytes.begin(), endpoint.bytes.end(), [](std::uint8_t byte) { return byte == 0; });
}

}  // namespace tcptune::config
