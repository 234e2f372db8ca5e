// A rule is shadowed when an earlier rule's match takes every socket it would.
#include "tcptune/config/rule_shadowing.hpp"

#include <gtest/gtest.h>

#include "tcptune/config/policy_loader.hpp"

namespace tcptune::config {
namespace {

Policy load(const std::string& text) {
  const LoadResult result = load_policy_text(text, "t.toml");
  EXPECT_TRUE(result.ok()) << result.error().to_string();
  return result.ok() ? result.policy() : Policy{};
}

// Whether the second rule of "[[rule]]\nmatch = FIRST\n[[rule]]\nmatch = SECOND" is shadowed.
bool second_shadowed(const std::string& first, const std::string& second) {
  const Policy policy = load("[[rule]]\nmatch = " + first + "\n[[rule]]\nmatch = " + second + "\n");
  const std::vector<ShadowedRule> shadowed = shadowed_rules(policy);
  return shadowed.size() == 1 && shadowed[0].rule == 1 && shadowed[0].by == 0;
}

TEST(RuleShadowing, Role) {
  EXPECT_TRUE(second_shadowed("{}", "{ role = \"server\" }"));
  EXPECT_TRUE(second_shadowed("{ role = \"client\" }", "{ role = \"client\", port = 80 }"));
  EXPECT_FALSE(second_shadowed("{ role = \"client\" }", "{ role = \"server\" }"));
  EXPECT_FALSE(second_shadowed("{ role = \"client\" }", "{}"));
}

TEST(RuleShadowing, PortsAsAUnion) {
  EXPECT_TRUE(second_shadowed("{ port = [\"8000-8099\", \"8100-8200\"] }", "{ port = \"8050-8150\" }"));
  EXPECT_TRUE(second_shadowed("{ port = [80, 443] }", "{ port = [443, 80] }"));
  EXPECT_FALSE(second_shadowed("{ port = [\"8000-8099\", \"8101-8200\"] }", "{ port = \"8050-8150\" }"));
  EXPECT_FALSE(second_shadowed("{ port = 80 }", "{}"));
}

TEST(RuleShadowing, PeersByPrefix) {
  EXPECT_TRUE(second_shadowed("{ peer = \"10.0.0.0/8\" }", "{ peer = [\"10.1.0.0/16\", \"10.2.3.4\"] }"));
  EXPECT_TRUE(second_shadowed("{ peer = \"2001:db8::/32\" }", "{ peer = \"2001:db8:1::/48\" }"));
  EXPECT_FALSE(second_shadowed("{ peer = \"10.0.0.0/8\" }", "{ peer = [\"10.1.0.0/16\", \"192.0.2.1\"] }"));
  EXPECT_FALSE(second_shadowed("{ peer = \"10.1.0.0/16\" }", "{ peer = \"10.0.0.0/8\" }"));
  EXPECT_FALSE(second_shadowed("{ peer = \"10.0.0.0/8\" }", "{ port = 80 }"));
}

TEST(RuleShadowing, ProgramsConservatively) {
  EXPECT_TRUE(second_shadowed("{ program = \"*\" }", "{ program = \"curl*\" }"));
  EXPECT_TRUE(second_shadowed("{ program = \"py*\" }", "{ program = [\"python3\", \"py*\"] }"));
  // "py*" covers "pyth*" too, but the check does not compare globs beyond equality: no false alarm.
  EXPECT_FALSE(second_shadowed("{ program = \"py*\" }", "{ program = \"pyth*\" }"));
  EXPECT_FALSE(second_shadowed("{ program = \"curl\" }", "{ program = \"wget\" }"));
}

TEST(RuleShadowing, AllFieldsTogetherAndTheFirstThatShadows) {
  const Policy policy = load(R"([[rule]]
match = { port = 443 }
[[rule]]
match = { role = "client" }
[[rule]]
match = { role = "client", port = 443, peer = "192.0.2.0/24" }
[[rule]]
match = { role = "server", port = 443 }
)");
  const std::vector<ShadowedRule> shadowed = shadowed_rules(policy);
  ASSERT_EQ(shadowed.size(), 2U);
  EXPECT_EQ(shadowed[0].rule, 2U);
  EXPECT_EQ(shadowed[0].by, 0U);  // the first that covers it, though rule 2 does too
  EXPECT_EQ(shadowed[1].rule, 3U);
  EXPECT_EQ(shadowed[1].by, 0U);
}

TEST(RuleShadowing, DistinctRulesAreNotShadowed) {
  std::string text;
  for (int port = 1; port <= 100; ++port) {
    text += "[[rule]]\nmatch = { port = " + std::to_string(port) + " }\n";
  }
  EXPECT_TRUE(shadowed_rules(load(text)).empty());
}

}  // namespace
}  // namespace tcptune::config
