// keep_warm = { protocol = PRESET or heartbeat = STRING or heartbeat_hex = HEX, interval = DURATION or "auto",
//               max_idle = DURATION }
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "tcptune/config/keep_warm_presets.hpp"
#include "tcptune/config/policy_loader.hpp"

namespace tcptune::config {
namespace {

using namespace std::chrono_literals;

// The [defaults] keep_warm of a one-line policy; fails the test when it does not load.
KeepWarm defaults_keep_warm(const std::string& keep_warm) {
  const LoadResult result = load_policy_text("[defaults]\nkeep_warm = " + keep_warm + "\n", "t.toml");
  EXPECT_TRUE(result.ok()) << keep_warm << ": " << result.error().to_string();
  if (!result.ok() || !result.policy().defaults.keep_warm.has_value()) {
    ADD_FAILURE() << keep_warm << ": no keep_warm";
    return {};
  }
  return *result.policy().defaults.keep_warm;
}

// The one-line error of `keep_warm = VALUE` on line 2 of a policy.
std::string error_of(const std::string& keep_warm) {
  const LoadResult result = load_policy_text("[defaults]\nkeep_warm = " + keep_warm + "\n", "t.toml");
  if (result.ok()) {
    ADD_FAILURE() << keep_warm << ": loaded without error";
    return {};
  }
  const std::string message = result.error().to_string();
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  return message;
}

TEST(KeepWarm, HeartbeatWithDefaults) {
  const KeepWarm k = defaults_keep_warm(R"({ heartbeat = "\n" })");
  EXPECT_EQ(k.payload, "\n");
  EXPECT_FALSE(k.interval.has_value());  // "auto"
  EXPECT_EQ(k.max_idle, Duration(60s));
}

TEST(KeepWarm, EscapesGiveTheirBytes) {
  EXPECT_EQ(defaults_keep_warm(R"({ heartbeat = "\r\n" })").payload, "\r\n");
  EXPECT_EQ(defaults_keep_warm(R"({ heartbeat = "\t\\\"" })").payload, "\t\\\"");
  EXPECT_EQ(defaults_keep_warm(R"({ heartbeat = "\u0000" })").payload, std::string(1, '\0'));
  EXPECT_EQ(defaults_keep_warm(R"({ heartbeat = "\u00e9" })").payload, "\xc3\xa9");  // UTF-8: two bytes
  EXPECT_EQ(defaults_keep_warm(R"({ heartbeat = 'a\n' })").payload, "a\\n");         // literal string: no escapes
}

TEST(KeepWarm, HexDecodes) {
  EXPECT_EQ(defaults_keep_warm(R"({ heartbeat_hex = "08000000000000ce" })").payload,
            std::string("\x08\x00\x00\x00\x00\x00\x00\xce", 8));
  EXPECT_EQ(defaults_keep_warm(R"({ heartbeat_hex = "0A0d" })").payload, "\n\r");
  EXPECT_EQ(defaults_keep_warm(R"({ heartbeat_hex = "fF" })").payload, "\xff");
}

TEST(KeepWarm, IntervalAndMaxIdle) {
  const KeepWarm k = defaults_keep_warm(R"({ heartbeat = "\r\n", interval = "150ms", max_idle = "5m" })");
  EXPECT_EQ(k.payload, "\r\n");
  EXPECT_EQ(k.interval, Duration(150ms));
  EXPECT_EQ(k.max_idle, Duration(5min));
  EXPECT_FALSE(defaults_keep_warm(R"({ heartbeat = "\n", interval = "auto" })").interval.has_value());
}

TEST(KeepWarm, Bounds) {
  EXPECT_EQ(defaults_keep_warm(R"({ heartbeat = "\n", interval = "10ms" })").interval, Duration(10ms));
  EXPECT_EQ(defaults_keep_warm(R"({ heartbeat = "\n", interval = "1h" })").interval, Duration(1h));
  EXPECT_EQ(defaults_keep_warm(R"({ heartbeat = "\n", max_idle = "1s" })").max_idle, Duration(1s));
  EXPECT_EQ(defaults_keep_warm(R"({ heartbeat = "\n", max_idle = "24h" })").max_idle, Duration(24h));
  EXPECT_EQ(defaults_keep_warm("{ heartbeat = \"" + std::string(64, 'x') + "\" }").payload.size(), 64U);
  EXPECT_EQ(defaults_keep_warm("{ heartbeat_hex = \"" + std::string(128, 'a') + "\" }").payload.size(), 64U);
  // 32 two-byte characters are 64 bytes; the limit counts bytes, not characters.
  std::string e_acute;
  for (int i = 0; i < 32; ++i) {
    e_acute += "\\u00e9";
  }
  EXPECT_EQ(defaults_keep_warm("{ heartbeat = \"" + e_acute + "\" }").payload.size(), 64U);
  EXPECT_NE(error_of("{ heartbeat = \"" + e_acute + "x\" }").find("'heartbeat' is 65 bytes; at most 64"),
            std::string::npos);
}

TEST(KeepWarm, TableSyntaxAndRules) {
  const LoadResult result = load_policy_text(R"(
[defaults.keep_warm]
heartbeat = "\n"
interval = "200ms"
[[rule]]
name = "amqp"
keep_warm = { heartbeat_hex = "08000000000000ce", max_idle = "10m" }
[[rule]]
name = "inherits"
nodelay = "on"
)",
                                             "t.toml");
  ASSERT_TRUE(result.ok()) << result.error().to_string();
  const Policy& p = result.policy();
  ASSERT_TRUE(p.defaults.keep_warm.has_value());
  EXPECT_EQ(p.defaults.keep_warm->payload, "\n");
  EXPECT_EQ(p.defaults.keep_warm->interval, Duration(200ms));
  ASSERT_EQ(p.rules.size(), 2U);
  // The rule's keep_warm replaces the one in [defaults] whole: its interval is "auto", not 200ms.
  ASSERT_TRUE(p.rules[0].effective.keep_warm.has_value());
  EXPECT_EQ(p.rules[0].effective.keep_warm->payload.size(), 8U);
  EXPECT_FALSE(p.rules[0].effective.keep_warm->interval.has_value());
  EXPECT_EQ(p.rules[0].effective.keep_warm->max_idle, Duration(10min));
  EXPECT_FALSE(p.rules[1].tuning.keep_warm.has_value());
  ASSERT_TRUE(p.rules[1].effective.keep_warm.has_value());
  EXPECT_EQ(p.rules[1].effective.keep_warm->payload, "\n");
  EXPECT_EQ(p.rules[1].effective.keep_warm->interval, Duration(200ms));
}

TEST(KeepWarm, Errors) {
  struct Case {
    const char* keep_warm;
    const char* expected;  // "t.toml:LINE:COLUMN: message" prefix
  };
  const Case cases[] = {
      {R"({ interval = "150ms" })",
       "t.toml:2:13: 'keep_warm' needs 'protocol' (one of http1-client, redis-client, stomp, amqp091, lines), "
       "'heartbeat' (a string such as \"\\n\") or 'heartbeat_hex' (hex digits such as \"0a\")"},
      {R"({ protocol = "stomp", heartbeat = "\n" })",
       "t.toml:2:47: 'keep_warm' has both 'protocol' and 'heartbeat'; give one"},
      // The second one written is named, whatever the order of the keys.
      {R"({ heartbeat_hex = "0a", protocol = "stomp" })",
       "t.toml:2:48: 'keep_warm' has both 'heartbeat_hex' and 'protocol'; give one"},
      {R"({ protocol = "http1" })",
       "t.toml:2:26: unknown keep_warm protocol \"http1\"; known: http1-client, redis-client, stomp, amqp091, lines"},
      {R"({ protocol = "HTTP1-CLIENT" })", "t.toml:2:26: unknown keep_warm protocol \"HTTP1-CLIENT\""},
      {R"({ protocol = 1 })", "t.toml:2:26: 'protocol' must be a string, not 1"},
      {R"({ heartbeat = "\n", heartbeat_hex = "0a" })",
       "t.toml:2:49: 'keep_warm' has both 'heartbeat' and 'heartbeat_hex'; give one"},
      {R"({ heartbeat = "" })", "t.toml:2:27: 'heartbeat' must not be empty (1 to 64 bytes)"},
      {R"({ heartbeat_hex = "" })", "t.toml:2:31: 'heartbeat_hex' must not be empty (1 to 64 bytes)"},
      {R"({ heartbeat = 10 })", "t.toml:2:27: 'heartbeat' must be a string, not 10"},
      {R"({ heartbeat_hex = 10 })",
       "t.toml:2:31: 'heartbeat_hex' must be a string of hex digits such as \"0a\", not 10"},
      {R"({ heartbeat_hex = "abc" })", "t.toml:2:31: 'heartbeat_hex' has an odd number of hex digits (3)"},
      {R"({ heartbeat_hex = "0g" })", "t.toml:2:31: 'heartbeat_hex' has 'g' at offset 1: only hex digits"},
      {R"({ heartbeat_hex = "0a 0d" })", "t.toml:2:31: 'heartbeat_hex' has ' ' at offset 2"},
      {R"({ heartbeat_hex = "0x0a" })", "t.toml:2:31: 'heartbeat_hex' has 'x' at offset 1"},
      {R"({ heartbeat_hex = "0a\n" })", "t.toml:2:31: 'heartbeat_hex' has \\n at offset 2"},
      {R"({ heartbeat = "\n", interval = "9ms" })",
       "t.toml:2:44: 'interval' must be between 10 ms and 3600 s, not 9 ms"},
      {R"({ heartbeat = "\n", interval = "3601s" })",
       "t.toml:2:44: 'interval' must be between 10 ms and 3600 s, not 3601 s"},
      {R"({ heartbeat = "\n", interval = "fast" })", "t.toml:2:44: 'interval': \"fast\""},
      {R"({ heartbeat = "\n", interval = 150 })",
       "t.toml:2:44: 'interval' must be \"auto\" or a duration such as \"150ms\", not 150"},
      {R"({ heartbeat = "\n", max_idle = "999ms" })",
       "t.toml:2:44: 'max_idle' must be between 1 s and 86400 s, not 999 ms"},
      {R"({ heartbeat = "\n", max_idle = "25h" })",
       "t.toml:2:44: 'max_idle' must be between 1 s and 86400 s, not 90000 s"},
      {R"({ heartbeat = "\n", max_idle = "auto" })", "t.toml:2:44: 'max_idle': \"auto\""},
      {R"({ heartbeat = "\n", intervall = "150ms" })",
       "t.toml:2:33: unknown key 'intervall' in keep_warm; did you mean 'interval'?"},
      {R"({ heartbeat = "\n", payload = "x" })", "t.toml:2:33: unknown key 'payload' in keep_warm"},
      // A non-table value; its newline is escaped so the message stays one line.
      {R"("\n")", "t.toml:2:13: 'keep_warm' must be a table, not \"\\n\""},
      {"true", "t.toml:2:13: 'keep_warm' must be a table, not true"},
  };
  for (const Case& c : cases) {
    const std::string message = error_of(c.keep_warm);
    EXPECT_EQ(message.rfind(c.expected, 0), 0U)
        << c.keep_warm << "\n  got:      " << message << "\n  expected: " << c.expected;
  }
  const std::string too_long = error_of("{ heartbeat = \"" + std::string(65, 'x') + "\" }");
  EXPECT_EQ(too_long, "t.toml:2:27: 'heartbeat' is 65 bytes; at most 64");
  const std::string hex_too_long = error_of("{ heartbeat_hex = \"" + std::string(130, '0') + "\" }");
  EXPECT_EQ(hex_too_long, "t.toml:2:31: 'heartbeat_hex' is 65 bytes; at most 64");
}

TEST(KeepWarm, ProtocolPresetsGiveTheirBytesAndSide) {
  struct Expected {
    const char* name;
    std::string payload;
    HeartbeatSide side;
  };
  const Expected expected[] = {
      {"http1-client", "\r\n", HeartbeatSide::client},
      {"redis-client", "\r\n", HeartbeatSide::client},
      {"stomp", "\n", HeartbeatSide::both},
      {"amqp091", std::string("\x08\x00\x00\x00\x00\x00\x00\xce", 8), HeartbeatSide::both},
      {"lines", "\n", HeartbeatSide::both},
  };
  for (const Expected& e : expected) {
    const KeepWarm k = defaults_keep_warm(std::string("{ protocol = \"") + e.name + "\" }");
    EXPECT_EQ(k.protocol, e.name);
    EXPECT_EQ(k.payload, e.payload) << e.name;
    EXPECT_EQ(k.side, e.side) << e.name;
    EXPECT_FALSE(k.interval.has_value());
  }
  EXPECT_EQ(keep_warm_presets().size(), std::size(expected));
  // interval and max_idle go with a protocol as with explicit bytes.
  const KeepWarm k = defaults_keep_warm(R"({ protocol = "amqp091", interval = "150ms", max_idle = "5m" })");
  EXPECT_EQ(k.interval, Duration(150ms));
  EXPECT_EQ(k.max_idle, Duration(5min));
  // Explicit bytes name no protocol and leave the side to the rule's match.
  const KeepWarm bytes = defaults_keep_warm(R"({ heartbeat = "\r\n" })");
  EXPECT_TRUE(bytes.protocol.empty());
  EXPECT_EQ(bytes.side, HeartbeatSide::both);
}

TEST(KeepWarm, PresetTable) {
  std::set<std::string_view> names;
  for (const KeepWarmPreset& preset : keep_warm_presets()) {
    EXPECT_TRUE(names.insert(preset.name).second) << preset.name;
    EXPECT_GE(preset.payload.size(), 1U) << preset.name;
    EXPECT_LE(preset.payload.size(), 64U) << preset.name;
    EXPECT_FALSE(preset.source.empty()) << preset.name;
    EXPECT_EQ(find_keep_warm_preset(preset.name), &preset);
    EXPECT_NE(keep_warm_preset_names().find(preset.name), std::string::npos);
  }
  EXPECT_EQ(find_keep_warm_preset(""), nullptr);
  EXPECT_EQ(find_keep_warm_preset("http1"), nullptr);
  EXPECT_EQ(keep_warm_preset_names(), "http1-client, redis-client, stomp, amqp091, lines");
}

// The shim asks this before keeping a connection warm; its answer becomes conn_open's note.
TEST(KeepWarm, SideRefusal) {
  const KeepWarm http = defaults_keep_warm(R"({ protocol = "http1-client" })");
  EXPECT_FALSE(heartbeat_side_refusal(http, Role::client).has_value());
  EXPECT_EQ(heartbeat_side_refusal(http, Role::server),
            "http1-client heartbeats are only valid from the client; not kept warm on accepted sockets");
  EXPECT_EQ(heartbeat_side_refusal(http, Role::any),
            "http1-client heartbeats are only valid from the client, and this connection's side is not known (it "
            "was connected before the shim saw it); not kept warm");
  for (const char* both : {R"({ protocol = "stomp" })", R"({ protocol = "amqp091" })", R"({ protocol = "lines" })",
                           R"({ heartbeat = "\n" })"}) {
    const KeepWarm k = defaults_keep_warm(both);
    for (const Role side : {Role::client, Role::server, Role::any}) {
      EXPECT_FALSE(heartbeat_side_refusal(k, side).has_value()) << both;
    }
  }
  KeepWarm server_only = http;
  server_only.protocol = "push";
  server_only.side = HeartbeatSide::server;
  EXPECT_FALSE(heartbeat_side_refusal(server_only, Role::server).has_value());
  EXPECT_EQ(heartbeat_side_refusal(server_only, Role::client),
            "push heartbeats are only valid from the server; not kept warm on connections the program opens");
}

TEST(KeepWarm, DescribePreset) {
  const std::string http = describe_keep_warm(defaults_keep_warm(R"({ protocol = "http1-client" })"));
  EXPECT_EQ(http.rfind("protocol http1-client: heartbeat of 2 bytes (\"\\r\\n\"), only on connections the program "
                       "opens (client side), after ",
                       0),
            0U)
      << http;
  const std::string stomp = describe_keep_warm(defaults_keep_warm(R"({ protocol = "stomp" })"));
  EXPECT_EQ(stomp.rfind("protocol stomp: heartbeat of 1 byte (\"\\n\") after ", 0), 0U) << stomp;
  const std::string bytes = describe_keep_warm(defaults_keep_warm(R"({ heartbeat = "\n" })"));
  EXPECT_EQ(bytes.rfind("heartbeat of 1 byte (\"\\n\") after ", 0), 0U) << bytes;
}

// A rule that could never send its preset's heartbeat is refused, at the protocol's value.
TEST(KeepWarm, PresetSideAgainstTheRulesRole) {
  const LoadResult server = load_policy_text(
      "[[rule]]\nmatch = { role = \"server\", port = 8080 }\nkeep_warm = { protocol = \"http1-client\" }\n", "t.toml");
  ASSERT_FALSE(server.ok());
  EXPECT_EQ(server.error().to_string(),
            "t.toml:3:26: keep_warm protocol \"http1-client\" is only valid from the client, and this rule matches "
            "only accepted (server-side) sockets (role = \"server\"), so it would never send a heartbeat; match role "
            "\"client\" or \"any\"");
  const LoadResult table_syntax = load_policy_text(
      "[[rule]]\nmatch = { role = \"server\" }\n[rule.keep_warm]\ninterval = \"1s\"\nprotocol = \"redis-client\"\n",
      "t.toml");
  ASSERT_FALSE(table_syntax.ok());
  EXPECT_EQ(table_syntax.error().to_string().rfind("t.toml:5:12: keep_warm protocol \"redis-client\"", 0), 0U)
      << table_syntax.error().to_string();
  for (const char* ok : {"[[rule]]\nmatch = { role = \"client\" }\nkeep_warm = { protocol = \"http1-client\" }\n",
                         "[[rule]]\nmatch = { port = 80 }\nkeep_warm = { protocol = \"http1-client\" }\n",
                         "[[rule]]\nmatch = { role = \"server\" }\nkeep_warm = { protocol = \"stomp\" }\n",
                         // Inherited from [defaults]: the shim just skips the rule's accepted sockets.
                         "[defaults]\nkeep_warm = { protocol = \"http1-client\" }\n[[rule]]\nmatch = { role = "
                         "\"server\" }\n"}) {
    const LoadResult loaded = load_policy_text(ok, "t.toml");
    EXPECT_TRUE(loaded.ok()) << ok << ": " << loaded.error().to_string();
  }
}

TEST(KeepWarm, ErrorsInRules) {
  const LoadResult unknown =
      load_policy_text("[[rule]]\nname = \"r\"\nkeep_warm = { heartbeat = \"\\n\", max_idel = \"5m\" }\n", "t.toml");
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.error().to_string(), "t.toml:3:33: unknown key 'max_idel' in keep_warm; did you mean 'max_idle'?");
  const LoadResult misspelt = load_policy_text("[[rule]]\nkeep_wram = { heartbeat = \"\\n\" }\n", "t.toml");
  ASSERT_FALSE(misspelt.ok());
  EXPECT_EQ(misspelt.error().to_string(), "t.toml:2:1: unknown key 'keep_wram' in [[rule]]; did you mean 'keep_warm'?");
}

}  // namespace
}  // namespace tcptune::config
