// Which keep_warm settings can reach accepted (server-side) sockets, for `tcptune check`'s warning.
#include "tcptune/config/heartbeat_reach.hpp"

#include <gtest/gtest.h>

#include <filesystem>

#include "tcptune/config/policy_loader.hpp"

namespace tcptune::config {
namespace {

std::vector<int> reach(const char* toml) {
  const LoadResult loaded = load_policy_text(toml, "reach.toml");
  EXPECT_TRUE(loaded.ok()) << loaded.error().to_string();
  return loaded.ok() ? heartbeats_reaching_accepted_sockets(loaded.policy()) : std::vector<int>{};
}

TEST(HeartbeatReach, DefaultsReachEverySocket) {
  EXPECT_EQ(reach("[defaults]\nkeep_warm = { heartbeat = \"\\n\" }\n"), std::vector<int>{kDefaultsReach});
  // Even behind a rule that takes every server socket: that rule inherits the heartbeat.
  EXPECT_EQ(reach("[defaults]\nkeep_warm = { heartbeat = \"\\n\" }\n"
                  "[[rule]]\nmatch = { role = \"server\" }\n"),
            std::vector<int>{kDefaultsReach});
}

TEST(HeartbeatReach, RulesByRole) {
  EXPECT_EQ(reach("[[rule]]\nmatch = { role = \"client\" }\nkeep_warm = { heartbeat = \"\\n\" }\n"
                  "[[rule]]\nmatch = { port = 61613 }\nkeep_warm = { heartbeat = \"\\n\" }\n"
                  "[[rule]]\nmatch = { role = \"server\", port = 8080 }\nkeep_warm = { heartbeat = \"\\n\" }\n"
                  "[[rule]]\nmatch = { role = \"any\" }\nnodelay = \"on\"\n"),
            (std::vector<int>{1, 2}));
}

TEST(HeartbeatReach, ShadowedByAnEarlierCatchAllServerRule) {
  EXPECT_TRUE(reach("[[rule]]\nmatch = { role = \"server\" }\nnodelay = \"on\"\n"
                    "[[rule]]\nkeep_warm = { heartbeat = \"\\n\" }\n")
                  .empty());
  // A rule limited to some peers, ports or programs leaves the other server sockets to later rules.
  EXPECT_EQ(reach("[[rule]]\nmatch = { role = \"server\", program = \"nginx\" }\nnodelay = \"on\"\n"
                  "[[rule]]\nkeep_warm = { heartbeat = \"\\n\" }\n"),
            std::vector<int>{1});
}

// The shim never sends a client-only protocol preset on accepted sockets; a preset valid from
// both sides reaches them unless the rule names the ports that speak its protocol.
TEST(HeartbeatReach, ProtocolPresets) {
  EXPECT_TRUE(reach("[defaults]\nkeep_warm = { protocol = \"http1-client\" }\n").empty());
  EXPECT_TRUE(reach("[[rule]]\nkeep_warm = { protocol = \"redis-client\" }\n").empty());
  EXPECT_EQ(reach("[defaults]\nkeep_warm = { protocol = \"stomp\" }\n"), std::vector<int>{kDefaultsReach});
  EXPECT_EQ(reach("[[rule]]\nmatch = { port = 61613 }\nkeep_warm = { protocol = \"stomp\" }\n"
                  "[[rule]]\nmatch = { role = \"server\", port = [5672, 5671] }\nkeep_warm = { protocol = "
                  "\"amqp091\" }\n"
                  "[[rule]]\nmatch = { peer = \"10.0.0.0/8\" }\nkeep_warm = { protocol = \"lines\" }\n"
                  "[[rule]]\nmatch = { port = 6379 }\nkeep_warm = { heartbeat = \"\\r\\n\" }\n"),
            (std::vector<int>{2, 3}));
}

TEST(HeartbeatReach, NoPresetReachesAcceptedSockets) {
  for (const auto& entry :
       std::filesystem::directory_iterator(std::filesystem::path(TCPTUNE_SOURCE_DIR) / "config/presets")) {
    const LoadResult loaded = load_policy_file(entry.path().string());
    ASSERT_TRUE(loaded.ok()) << loaded.error().to_string();
    EXPECT_TRUE(heartbeats_reaching_accepted_sockets(loaded.policy()).empty()) << entry.path();
  }
}

}  // namespace
}  // namespace tcptune::config
