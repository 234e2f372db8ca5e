#include "tcptune/config/cidr.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <gtest/gtest.h>

namespace tcptune::config {
namespace {

Endpoint v4(const char* text, std::uint16_t port = 0) {
  sockaddr_in in{};
  in.sin_family = AF_INET;
  in.sin_port = htons(port);
  inet_pton(AF_INET, text, &in.sin_addr);
  return endpoint_from_sockaddr(reinterpret_cast<sockaddr*>(&in), sizeof in);
}

Endpoint v6(const char* text, std::uint16_t port = 0) {
  sockaddr_in6 in6{};
  in6.sin6_family = AF_INET6;
  in6.sin6_port = htons(port);
  inet_pton(AF_INET6, text, &in6.sin6_addr);
  return endpoint_from_sockaddr(reinterpret_cast<sockaddr*>(&in6), sizeof in6);
}

TEST(Cidr, ParsesAndContains) {
  const Cidr net = parse_cidr("203.0.113.0/24").value();
  EXPECT_TRUE(cidr_contains(net, v4("203.0.113.77")));
  EXPECT_FALSE(cidr_contains(net, v4("203.0.114.1")));
  const Cidr odd = parse_cidr("10.0.0.0/13").value();
  EXPECT_TRUE(cidr_contains(odd, v4("10.7.255.255")));
  EXPECT_FALSE(cidr_contains(odd, v4("10.8.0.0")));
  EXPECT_TRUE(cidr_contains(parse_cidr("0.0.0.0/0").value(), v4("198.18.0.2")));
}

TEST(Cidr, BareAddressIsHostPrefix) {
  const Cidr host = parse_cidr("127.0.0.2").value();
  EXPECT_EQ(host.prefix_len, 32);
  EXPECT_TRUE(cidr_contains(host, v4("127.0.0.2")));
  EXPECT_FALSE(cidr_contains(host, v4("127.0.0.1")));
  EXPECT_EQ(parse_cidr("::1").value().prefix_len, 128);
}

TEST(Cidr, Ipv6AndMapped) {
  const Cidr net = parse_cidr("2001:db8::/32").value();
  EXPECT_TRUE(cidr_contains(net, v6("2001:db8:1::5")));
  EXPECT_FALSE(cidr_contains(net, v6("2001:db9::1")));
  const Endpoint mapped = v6("::ffff:203.0.113.9", 443);
  EXPECT_EQ(mapped.family, 4);
  EXPECT_EQ(mapped.port, 443);
  EXPECT_TRUE(cidr_contains(parse_cidr("203.0.113.0/24").value(), mapped));
  EXPECT_FALSE(cidr_contains(net, v4("32.1.13.184")));  // families never mix
}

TEST(Cidr, Errors) {
  EXPECT_NE(parse_cidr("203.0.113.5/24").error().find("did you mean \"203.0.113.0/24\""), std::string::npos);
  EXPECT_NE(parse_cidr("10.0.0.0/33").error().find("0..32"), std::string::npos);
  EXPECT_NE(parse_cidr("2001:db8::/129").error().find("0..128"), std::string::npos);
  EXPECT_FALSE(parse_cidr("300.1.1.1").ok());
  EXPECT_FALSE(parse_cidr("example.com").ok());
  EXPECT_FALSE(parse_cidr("10.0.0.0/").ok());
}

TEST(Cidr, Formatting) {
  EXPECT_EQ(format_cidr(parse_cidr("2001:db8::/32").value()), "2001:db8::/32");
  EXPECT_EQ(format_endpoint(v4("198.18.0.2", 5001)), "198.18.0.2:5001");
  EXPECT_EQ(format_endpoint(v6("::1", 80)), "[::1]:80");
}

}  // namespace
}  // namespace tcptune::config
