#include "tcptune/config/rule_matcher.hpp"

#include <gtest/gtest.h>

#include "tcptune/config/policy_loader.hpp"

namespace tcptune::config {
namespace {

Policy load(const char* text) {
  LoadResult result = load_policy_text(text, "t.toml");
  EXPECT_TRUE(result.ok()) << (result.ok() ? "" : result.error().to_string());
  return result.ok() ? result.policy() : Policy{};
}

Endpoint peer(const char* cidr_text, std::uint16_t port) {
  const Cidr cidr = parse_cidr(cidr_text).value();
  Endpoint e;
  e.family = cidr.family;
  e.bytes = cidr.bytes;
  e.port = port;
  return e;
}

constexpr const char* kPolicy = R"(
[defaults]
nodelay = "on"
[[rule]]
name = "wan"
match = { peer = ["203.0.113.0/24", "2001:db8::/32"], port = [443, "8000-8100"], role = "client", program = "legacy_*" }
nodelay = "force"
[[rule]]
name = "api server"
match = { port = 8080, role = "server" }
nodelay = "off"
[[rule]]
name = "catch-all"
congestion = "bbr"
)";

TEST(RuleMatcher, FirstMatchWinsAndFallsThrough) {
  const Policy policy = load(kPolicy);
  ConnectionFacts facts{Role::client, peer("203.0.113.7", 443), 0, "legacy_app"};
  EXPECT_EQ(match_rule(policy, facts), 0);
  facts.program = "modern_app";
  EXPECT_EQ(match_rule(policy, facts), 2);  // catch-all: rule with no match table
  facts.program = "legacy_app";
  facts.peer.port = 8050;
  EXPECT_EQ(match_rule(policy, facts), 0);
  facts.peer.port = 8101;
  EXPECT_EQ(match_rule(policy, facts), 2);
  facts.peer = peer("2001:db8::1", 443);
  EXPECT_EQ(match_rule(policy, facts), 0);
}

TEST(RuleMatcher, RoleAndLocalPortForServers) {
  const Policy policy = load(kPolicy);
  ConnectionFacts facts{Role::server, peer("198.51.100.1", 40000), 8080, "srv"};
  EXPECT_EQ(match_rule(policy, facts), 1);
  facts.local_port = 8081;
  EXPECT_EQ(match_rule(policy, facts), 2);
  ConnectionFacts client{Role::client, peer("198.51.100.1", 8080), 0, "srv"};
  EXPECT_EQ(match_rule(policy, client), 2);  // a client to port 8080 is not the server rule
}

TEST(RuleMatcher, ListenerIgnoresPeerLists) {
  const Policy policy = load(R"(
[[rule]]
name = "from office"
match = { peer = "192.0.2.0/24", port = 22, role = "server" }
keepalive = { idle = "10s" }
)");
  ConnectionFacts listener{Role::server, {}, 22, "sshd"};
  EXPECT_EQ(match_rule(policy, listener, true), 0);
  EXPECT_EQ(match_rule(policy, listener, false), -1);  // an accepted socket needs the peer
}

TEST(RuleMatcher, DefaultsInheritedByRules) {
  const Policy policy = load(kPolicy);
  EXPECT_EQ(tuning_for(policy, 2).nodelay, NodelayMode::on);  // from [defaults]
  EXPECT_EQ(tuning_for(policy, 2).congestion, "bbr");
  EXPECT_EQ(tuning_for(policy, 0).nodelay, NodelayMode::force);
  EXPECT_EQ(tuning_for(policy, -1).nodelay, NodelayMode::on);
  EXPECT_FALSE(tuning_for(policy, -1).congestion.has_value());
  EXPECT_EQ(rule_name(policy, 1), "api server");
  EXPECT_EQ(rule_name(policy, -1), "(defaults)");
}

TEST(Glob, Patterns) {
  EXPECT_TRUE(glob_match("legacy_*", "legacy_app"));
  EXPECT_TRUE(glob_match("legacy_*", "legacy_"));
  EXPECT_FALSE(glob_match("legacy_*", "legacy"));
  EXPECT_TRUE(glob_match("*", ""));
  EXPECT_TRUE(glob_match("py?hon3", "python3"));
  EXPECT_TRUE(glob_match("*sql*", "postgresql"));
  EXPECT_TRUE(glob_match("[a-c]url", "curl"));
  EXPECT_FALSE(glob_match("[!c]url", "curl"));
  EXPECT_TRUE(glob_match("[!c]url", "purl"));
  EXPECT_FALSE(glob_match("nginx", "nginx2"));
  EXPECT_TRUE(glob_match("a*b*c", "aXXbYYc"));
  EXPECT_FALSE(glob_match("a*b*c", "aXXbYY"));
}

TEST(Glob, Star) {
  EXPECT_TRUE(glob_match("*", "nginx"));
  EXPECT_TRUE(glob_match("**", "nginx"));
  EXPECT_TRUE(glob_match("*x", "nginx"));
  EXPECT_FALSE(glob_match("*x", "nginx2"));
  // No FNM_PATHNAME or FNM_PERIOD: '*' takes a '/' and a leading '.' like any other byte.
  EXPECT_TRUE(glob_match("*", ".hidden"));
  EXPECT_TRUE(glob_match("a*c", "a/b/c"));
}

TEST(Glob, QuestionMark) {
  EXPECT_TRUE(glob_match("?", "x"));
  EXPECT_FALSE(glob_match("?", ""));
  EXPECT_FALSE(glob_match("?", "xy"));
  EXPECT_TRUE(glob_match("java?", "java8"));
  EXPECT_TRUE(glob_match("a?c", "a/c"));
}

TEST(Glob, Brackets) {
  EXPECT_TRUE(glob_match("python[23]", "python3"));
  EXPECT_FALSE(glob_match("python[23]", "python4"));
  EXPECT_TRUE(glob_match("[^c]url", "purl"));  // '^' negates as '!' does
  EXPECT_FALSE(glob_match("[^c]url", "curl"));
  EXPECT_TRUE(glob_match("[]x]", "]"));  // ']' first is a member
  EXPECT_TRUE(glob_match("[a-]", "-"));  // '-' last is a member
  EXPECT_TRUE(glob_match("[[:digit:]]x", "7x"));
  EXPECT_FALSE(glob_match("[[:digit:]]x", "ax"));
  // An unclosed '[' is an ordinary character.
  EXPECT_TRUE(glob_match("[abc", "[abc"));
  EXPECT_FALSE(glob_match("[abc", "a"));
}

TEST(Glob, Escapes) {
  EXPECT_TRUE(glob_match("a\\*", "a*"));
  EXPECT_FALSE(glob_match("a\\*", "ab"));
  EXPECT_TRUE(glob_match("\\?", "?"));
  EXPECT_FALSE(glob_match("\\?", "x"));
  EXPECT_TRUE(glob_match("\\[x]", "[x]"));
  EXPECT_TRUE(glob_match("a\\b", "ab"));                      // an escaped ordinary character is itself
  EXPECT_FALSE(glob_match(std::string_view("a\0", 2), "a"));  // no program name holds a NUL
}

}  // namespace
}  // namespace tcptune::config
