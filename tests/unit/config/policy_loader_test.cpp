#include "tcptune/config/policy_loader.hpp"

#include <netinet/in.h>
#include <netinet/tcp.h>

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>

#include "tcptune/config/rule_matcher.hpp"

namespace tcptune::config {
namespace {

using namespace std::chrono_literals;

constexpr const char* kFull = R"(
version = 1
[defaults]
nodelay = "on"
[log]
path = "/var/log/tcptune/{program}.{pid}.log"
level = "debug"
[[rule]]
name = "wan"
match = { peer = ["203.0.113.0/24", "2001:db8::/32"], port = [443, "8000-8100"], role = "client", program = "legacy_*" }
nodelay = "force"
buffers = { bandwidth = "1Gbit", rtt = "180ms" }
override_app_buffers = true
congestion = "bbr"
keepalive = { idle = "30s", interval = "5s", count = 4 }
user_timeout = "20s"
notsent_lowat = "128KiB"
thin_linear_timeouts = true
quickack = true
tos = "0x10"
sockopt = [ { level = "IPPROTO_TCP", name = "TCP_MAXSEG", value = 1400 } ]
[[rule]]
match = { role = "server", port = 8080 }
buffers = { sndbuf = "4MB", rcvbuf = 1048576 }
[[rule]]
name = "auto"
buffers = { bandwidth = "100Mbit", rtt = "auto" }
)";

TEST(PolicyLoader, EveryKey) {
  const LoadResult result = load_policy_text(kFull, "full.toml");
  ASSERT_TRUE(result.ok()) << result.error().to_string();
  const Policy& p = result.policy();
  EXPECT_EQ(p.source, "full.toml");
  EXPECT_EQ(p.defaults.nodelay, NodelayMode::on);
  EXPECT_EQ(p.log.path, "/var/log/tcptune/{program}.{pid}.log");
  EXPECT_EQ(p.log.level, LogLevel::debug);
  ASSERT_EQ(p.rules.size(), 3U);
  const Rule& wan = p.rules[0];
  EXPECT_EQ(wan.name, "wan");
  EXPECT_EQ(wan.pos.line, 8U);
  EXPECT_EQ(wan.match.peers.size(), 2U);
  ASSERT_EQ(wan.match.ports.size(), 2U);
  EXPECT_EQ(wan.match.ports[1].first, 8000);
  EXPECT_EQ(wan.match.ports[1].last, 8100);
  EXPECT_EQ(wan.match.role, Role::client);
  EXPECT_EQ(wan.match.programs, std::vector<std::string>{"legacy_*"});
  const Tuning& t = wan.tuning;
  EXPECT_EQ(t.nodelay, NodelayMode::force);
  EXPECT_EQ(t.buffers->bandwidth_bytes_per_s, 125000000U);
  EXPECT_EQ(t.buffers->rtt, Duration(180ms));
  EXPECT_EQ(t.override_app_buffers, true);
  EXPECT_EQ(t.congestion, "bbr");
  EXPECT_EQ(t.keepalive->idle, Duration(30s));
  EXPECT_EQ(t.keepalive->interval, Duration(5s));
  EXPECT_EQ(t.keepalive->count, 4);
  EXPECT_EQ(t.user_timeout, Duration(20s));
  EXPECT_EQ(t.notsent_lowat, 131072U);
  EXPECT_EQ(t.thin_linear_timeouts, true);
  EXPECT_EQ(t.quickack, true);
  EXPECT_EQ(t.tos, 16);
  ASSERT_EQ(t.sockopts.size(), 1U);
  EXPECT_EQ(t.sockopts[0].level, IPPROTO_TCP);
  EXPECT_EQ(t.sockopts[0].name, TCP_MAXSEG);
  EXPECT_EQ(t.sockopts[0].value, 1400);
  EXPECT_EQ(p.rules[1].name, "rule 2");
  EXPECT_EQ(p.rules[1].tuning.buffers->sndbuf, 4000000U);
  EXPECT_EQ(p.rules[1].tuning.buffers->rcvbuf, 1048576U);
  EXPECT_EQ(p.rules[1].effective.nodelay, NodelayMode::on);  // inherited from [defaults]
  EXPECT_TRUE(p.rules[2].tuning.buffers->rtt_auto);
}

TEST(PolicyLoader, EmptyPolicyIsValid) {
  const LoadResult result = load_policy_text("", "empty.toml");
  ASSERT_TRUE(result.ok());
  EXPECT_FALSE(result.policy().defaults.nodelay.has_value());
  EXPECT_TRUE(result.policy().rules.empty());
}

TEST(PolicyLoader, MissingFileIsNamed) {
  const LoadResult result = load_policy_file("/nonexistent/policy.toml");
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.error().to_string(), "/nonexistent/policy.toml: cannot read: No such file or directory");
}

TEST(PolicyLoader, DiscoveryOrder) {
  ::unsetenv("TCPTUNE_POLICY");
  ::unsetenv("TCPTUNE_POLICY_TOML");
  EXPECT_EQ(discover_policy_source(false, "/nonexistent").kind, PolicySource::Kind::builtin);
  EXPECT_EQ(discover_policy_source(false, "/proc/self/status").kind, PolicySource::Kind::system_file);
  ::setenv("TCPTUNE_POLICY_TOML", "[defaults]\nnodelay = \"off\"\n", 1);
  EXPECT_EQ(discover_policy_source(false, "/proc/self/status").kind, PolicySource::Kind::env_inline);
  const LoadResult inline_policy = load_discovered(discover_policy_source(false, "/nonexistent"));
  ASSERT_TRUE(inline_policy.ok());
  EXPECT_EQ(inline_policy.policy().source, "TCPTUNE_POLICY_TOML");
  EXPECT_EQ(inline_policy.policy().defaults.nodelay, NodelayMode::off);
  ::setenv("TCPTUNE_POLICY", "/some/file.toml", 1);
  EXPECT_EQ(discover_policy_source(false, "/nonexistent").kind, PolicySource::Kind::env_path);
  // Secure execution (setuid): the environment is not trusted.
  EXPECT_EQ(discover_policy_source(true, "/nonexistent").kind, PolicySource::Kind::builtin);
  ::unsetenv("TCPTUNE_POLICY");
  ::unsetenv("TCPTUNE_POLICY_TOML");
  const LoadResult builtin = load_discovered(discover_policy_source(false, "/nonexistent"));
  ASSERT_TRUE(builtin.ok());
  EXPECT_EQ(builtin.policy().defaults.nodelay, NodelayMode::on_wait);
  EXPECT_EQ(builtin.policy().source, "built-in default");
}

// `tcptune run` passes the text it validated, named after its file: messages and records name
// the file, with line and column; a file read fails under its own path. Ignored when setuid.
TEST(PolicyLoader, PolicyNameNamesTheTextsFile) {
  ::unsetenv("TCPTUNE_POLICY");
  ::setenv("TCPTUNE_POLICY_TOML", "[defaults]\nnodelay = \"sometimes\"\n", 1);
  ::setenv("TCPTUNE_POLICY_NAME", "/etc/example/policy.toml", 1);
  const LoadResult named = load_discovered(discover_policy_source(false, "/nonexistent"));
  ASSERT_FALSE(named.ok());
  EXPECT_EQ(named.error().to_string().rfind("/etc/example/policy.toml:2:11: ", 0), 0U) << named.error().to_string();
  ::setenv("TCPTUNE_POLICY_TOML", "[defaults]\nnodelay = \"off\"\n", 1);
  const LoadResult good = load_discovered(discover_policy_source(false, "/nonexistent"));
  ASSERT_TRUE(good.ok());
  EXPECT_EQ(good.policy().source, "/etc/example/policy.toml");
  EXPECT_TRUE(discover_policy_source(true, "/nonexistent").name.empty());
  ::setenv("TCPTUNE_POLICY", "/nonexistent/copy.toml", 1);
  const LoadResult unreadable = load_discovered(discover_policy_source(false, "/nonexistent"));
  ASSERT_FALSE(unreadable.ok());
  EXPECT_EQ(unreadable.error().to_string(), "/nonexistent/copy.toml: cannot read: No such file or directory");
  ::unsetenv("TCPTUNE_POLICY");
  ::unsetenv("TCPTUNE_POLICY_TOML");
  ::unsetenv("TCPTUNE_POLICY_NAME");
}

// Quantities beyond 64 bits are errors, not values wrapped to something small that loads.
TEST(PolicyLoader, HugeQuantitiesAreRejected) {
  const LoadResult lowat = load_policy_text("[defaults]\nnotsent_lowat = \"100000000000000000000\"\n", "t.toml");
  ASSERT_FALSE(lowat.ok());
  EXPECT_NE(lowat.error().to_string().find("too large"), std::string::npos) << lowat.error().to_string();
  const LoadResult bdp =
      load_policy_text("[defaults]\nbuffers = { bandwidth = \"10000000000000000000B/s\", rtt = \"60s\" }\n", "t.toml");
  ASSERT_FALSE(bdp.ok());
  EXPECT_NE(bdp.error().to_string().find("bandwidth x rtt is more than 2.15 GB, above the 1 GiB limit"),
            std::string::npos)
      << bdp.error().to_string();
}

// Every file in tests/policies/bad starts with "# expect: LINE:COLUMN: text".
TEST(PolicyLoader, BadPolicyCorpus) {
  const std::filesystem::path dir = std::filesystem::path(TCPTUNE_SOURCE_DIR) / "tests/policies/bad";
  int count = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    std::ifstream file(entry.path());
    std::string first;
    std::getline(file, first);
    std::smatch m;
    ASSERT_TRUE(std::regex_match(first, m, std::regex(R"(#\s*expect:\s*(\d+):(\d+):\s*(.*\S)\s*)")))
        << entry.path() << ": first line must be '# expect: LINE:COLUMN: text'";
    const LoadResult result = load_policy_file(entry.path().string());
    ASSERT_FALSE(result.ok()) << entry.path() << " loaded without error";
    const std::string message = result.error().to_string();
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
    EXPECT_EQ(message.rfind(entry.path().string() + ":" + m[1].str() + ":" + m[2].str() + ": ", 0), 0U) << message;
    EXPECT_NE(message.find(m[3].str()), std::string::npos) << message << "\n  expected: " << m[3].str();
    ++count;
  }
  EXPECT_GE(count, 20);
}

// More than kMaxRules rules is an error at the first rule past the limit; kMaxRules is fine.
TEST(PolicyLoader, RuleLimit) {
  std::string text = "version = 1\n";
  for (std::size_t i = 0; i < kMaxRules; ++i) {
    text += "[[rule]]\nmatch = { port = " + std::to_string(1 + i) + " }\n";
  }
  const LoadResult at_limit = load_policy_text(text, "rules.toml");
  ASSERT_TRUE(at_limit.ok()) << at_limit.error().to_string();
  EXPECT_EQ(at_limit.policy().rules.size(), kMaxRules);
  text += "[[rule]]\nname = \"one too many\"\n";
  const LoadResult over = load_policy_text(text, "rules.toml");
  ASSERT_FALSE(over.ok());
  EXPECT_EQ(over.error().to_string(),
            "rules.toml:" + std::to_string(2 + 2 * kMaxRules) +
                ":1: more than 4096 rules: this is rule 4097, past the limit; merge rules that tune alike (match "
                "takes lists of peers, ports and programs)");
}

// bursty-wan.toml's heartbeat is for the connections the program opens, never accepted ones,
// whose clients (HTTP, RESP) may read the newline as a broken reply.
TEST(PolicyLoader, BurstyWanHeartbeatIsForClientsOnly) {
  const LoadResult loaded =
      load_policy_file((std::filesystem::path(TCPTUNE_SOURCE_DIR) / "config/presets/bursty-wan.toml").string());
  ASSERT_TRUE(loaded.ok()) << loaded.error().to_string();
  const Policy& policy = loaded.policy();
  const Endpoint peer{4, {203, 0, 113, 7}, 61613};
  const ConnectionFacts client{Role::client, peer, 0, "bursty"};
  const ConnectionFacts accepted{Role::server, peer, 8080, "nginx"};
  const ConnectionFacts listener{Role::server, {}, 8080, "nginx"};
  ASSERT_TRUE(tuning_for(policy, match_rule(policy, client)).keep_warm.has_value());
  EXPECT_EQ(tuning_for(policy, match_rule(policy, client)).keep_warm->payload, "\n");
  EXPECT_FALSE(tuning_for(policy, match_rule(policy, accepted)).keep_warm.has_value());
  EXPECT_FALSE(tuning_for(policy, match_rule(policy, listener, true)).keep_warm.has_value());
  EXPECT_EQ(tuning_for(policy, match_rule(policy, accepted)).nodelay, NodelayMode::on);
}

TEST(PolicyLoader, PresetsLoad) {
  const std::filesystem::path dir = std::filesystem::path(TCPTUNE_SOURCE_DIR) / "config/presets";
  int count = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const LoadResult result = load_policy_file(entry.path().string());
    EXPECT_TRUE(result.ok()) << result.error().to_string();
    ++count;
  }
  EXPECT_GE(count, 3);
}

}  // namespace
}  // namespace tcptune::config

namespace tcptune::config {
namespace {

std::vector<std::string> error_lines(const LoadResult& result) {
  std::vector<std::string> lines;
  for (const PolicyError& error : result.all_errors()) {
    lines.push_back(error.to_string());
  }
  return lines;
}

// One pass reports every mistake, in the file's order, and error() (the shim's one line) is the first.
TEST(PolicyLoaderAllErrors, EveryMistakeInOnePass) {
  const LoadResult result = load_policy_text(R"([defaults]
nodelay = "sometimes"
[[rule]]
name = "a"
match = { prot = 443 }
keepalive = { idle = "30s", intreval = "5s" }
[[rule]]
name = "b"
buffers = { sndbuf = "1x" }
congestion = "bbr"
[log]
level = "loud"
)",
                                             "t.toml");
  ASSERT_FALSE(result.ok());
  const std::vector<std::string> lines = error_lines(result);
  ASSERT_EQ(lines.size(), 5U) << ::testing::PrintToString(lines);
  EXPECT_EQ(lines[0].rfind("t.toml:2:11: ", 0), 0U) << lines[0];
  EXPECT_EQ(lines[1].rfind("t.toml:5:11: unknown key 'prot' in match; did you mean 'port'?", 0), 0U) << lines[1];
  EXPECT_EQ(lines[2].rfind("t.toml:6:29: unknown key 'intreval' in keepalive; did you mean 'interval'?", 0), 0U)
      << lines[2];
  EXPECT_EQ(lines[3].rfind("t.toml:9:22: ", 0), 0U) << lines[3];
  EXPECT_EQ(lines[4].rfind("t.toml:12:9: ", 0), 0U) << lines[4];
  EXPECT_EQ(result.error().to_string(), lines[0]);
  for (const std::string& line : lines) {
    EXPECT_EQ(line.find('\n'), std::string::npos) << line;
  }
}

// A duplicate name is still found when the rule that repeats it has another mistake; a rule with
// a mistake is not checked for things that need it whole (no error cascades from it).
TEST(PolicyLoaderAllErrors, RulesAfterAMistakeAreStillRead) {
  const LoadResult result = load_policy_text(
      "[[rule]]\nname = \"x\"\nnodelay = 1\n[[rule]]\nname = \"x\"\nport = 80\n"
      "[[rule]]\nmatch = { role = \"server\" }\nkeep_warm = { protocol = \"http1-client\", max_idle = \"1ms\" }\n",
      "t.toml");
  const std::vector<std::string> lines = error_lines(result);
  ASSERT_EQ(lines.size(), 4U) << ::testing::PrintToString(lines);
  EXPECT_EQ(lines[0].rfind("t.toml:3:11: ", 0), 0U) << lines[0];
  EXPECT_NE(lines[1].find("t.toml:5:8: duplicate rule name \"x\""), std::string::npos) << lines[1];
  EXPECT_EQ(lines[2], "t.toml:6:1: unknown key 'port' in [[rule]]; put it in a rule's match = { ... }");
  EXPECT_EQ(lines[3].rfind("t.toml:9:53: 'max_idle' must be between", 0), 0U) << lines[3];
}

// A key at the wrong level says where it belongs; a misspelling names the nearest key.
TEST(PolicyLoaderAllErrors, KeyAtTheWrongLevel) {
  auto first = [](const std::string& text) { return load_policy_text(text, "t.toml").error().to_string(); };
  EXPECT_EQ(first("nodelay = \"on\"\n"),
            "t.toml:1:1: unknown key 'nodelay' in the policy; put it under [defaults] (every socket) or in a [[rule]]");
  EXPECT_EQ(first("[defaults]\nmatch = { port = 80 }\n"),
            "t.toml:2:1: unknown key 'match' in [defaults]; put it in a [[rule]]");
  EXPECT_EQ(first("path = \"/tmp/x.log\"\n"), "t.toml:1:1: unknown key 'path' in the policy; put it under [log]");
  EXPECT_EQ(first("[[rule]]\nsndbuf = \"1MiB\"\n"),
            "t.toml:2:1: unknown key 'sndbuf' in [[rule]]; put it in buffers = { ... }");
  EXPECT_EQ(first("[[rule]]\nmatch = { nodelay = \"on\" }\n"),
            "t.toml:2:11: unknown key 'nodelay' in match; put it under [defaults] (every socket) or in a [[rule]]");
  EXPECT_EQ(first("interval = \"1s\"\n"),
            "t.toml:1:1: unknown key 'interval' in the policy; put it under [log], in keepalive = { ... } or in "
            "keep_warm = { ... }");
  EXPECT_EQ(first("[defaults]\nnodelya = \"on\"\n"),
            "t.toml:2:1: unknown key 'nodelya' in [defaults]; did you mean 'nodelay'?");
  EXPECT_EQ(first("nodelya = \"on\"\n"),
            "t.toml:1:1: unknown key 'nodelya' in the policy; did you mean 'nodelay', under [defaults] (every "
            "socket) or in a [[rule]]?");
  EXPECT_EQ(first("[defaults]\nwhatever = 1\n"), "t.toml:2:1: unknown key 'whatever' in [defaults]");
}

// A size in single-letter units is valid, with a note saying how it was read.
TEST(PolicyLoaderAllErrors, AmbiguousSizesAreNoted) {
  const LoadResult result = load_policy_text(
      "[defaults]\nbuffers = { sndbuf = \"4M\", rcvbuf = \"4MiB\" }\nnotsent_lowat = \"16k\"\n", "t.toml");
  ASSERT_TRUE(result.ok()) << result.error().to_string();
  EXPECT_EQ(result.policy().defaults.buffers->sndbuf, 4000000U);
  ASSERT_EQ(result.notes.size(), 2U);
  EXPECT_EQ(result.notes[0].to_string(),
            "t.toml:2:22: \"4M\" read as 4,000,000 bytes (k, K, M and G are powers of 1000 here; \"4MiB\" is "
            "4,194,304)");
  EXPECT_EQ(result.notes[1].to_string().rfind("t.toml:3:17: \"16k\" read as 16,000 bytes", 0), 0U);
}

}  // namespace
}  // namespace tcptune::config
