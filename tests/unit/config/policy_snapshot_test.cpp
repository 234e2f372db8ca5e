// A compiled policy is the policy it was compiled from, for that build and that text only, and
// bytes that are not a whole snapshot of it are refused, whatever they hold.
#include "tcptune/config/policy_snapshot.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <variant>

#include "tcptune/config/policy_loader.hpp"

namespace tcptune::config {
namespace {

// Every key the loader reads, each away from its default, so that a field the snapshot
// dropped shows as a difference.
constexpr const char* kEveryKey = R"(version = 1
[defaults]
nodelay = "on-wait"
callsite = true
keep_warm = { heartbeat = "\n", interval = "150ms", max_idle = "5m" }
[log]
path = "/tmp/x/{program}.{pid}.jsonl"
level = "debug"
format = "text"
prometheus_textfile = "/tmp/x/{program}.prom"
interval = "2s"
slow_write = "3ms"
trace_writes = true
rotate_size = "1MiB"
keep = 3
callsite = true
summary = false
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
quickack = false
tos = "0x10"
sockopt = [ { level = "IPPROTO_TCP", name = "TCP_MAXSEG", value = 1400 } ]
keep_warm = { protocol = "http1-client" }
[[rule]]
match = { role = "server", port = 8080 }
buffers = { sndbuf = "4MB", rcvbuf = 1048576 }
[[rule]]
name = "auto"
buffers = { bandwidth = "100Mbit", rtt = "auto" }
)";

constexpr std::string_view kBuild = "\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f\x10\x11\x12\x13\x14";

Policy loaded(std::string_view text, const std::string& name) {
  LoadResult result = load_policy_text(text, name);
  EXPECT_TRUE(result.ok()) << result.error().to_string();
  return result.ok() ? std::move(result.policy()) : Policy{};
}

std::string refusal(std::string_view bytes, const SnapshotKey& key) {
  std::variant<Policy, std::string> decoded = decode_policy_snapshot(bytes, key);
  return decoded.index() == 1 ? std::get<1>(decoded) : "(decoded)";
}

TEST(PolicySnapshot, EveryKeyRoundTrips) {
  const Policy policy = loaded(kEveryKey, "every.toml");
  const SnapshotKey key{kBuild, "every.toml", kEveryKey};
  const std::string bytes = encode_policy_snapshot(policy, key);
  std::variant<Policy, std::string> decoded = decode_policy_snapshot(bytes, key);
  ASSERT_EQ(decoded.index(), 0U) << std::get<1>(decoded);
  EXPECT_TRUE(std::get<0>(decoded) == policy);
  // The fields that are not left at their defaults really are compared.
  Policy changed = std::get<0>(decoded);
  changed.rules[0].effective.keep_warm->framing = Framing::guessed;
  EXPECT_FALSE(changed == policy);
}

TEST(PolicySnapshot, PresetsAndTestPoliciesRoundTrip) {
  int count = 0;
  for (const char* dir : {"/config/presets", "/tests/preload/policies"}) {
    for (const auto& entry : std::filesystem::directory_iterator(std::string(TCPTUNE_SOURCE_DIR) + dir)) {
      std::ifstream in(entry.path());
      std::stringstream text;
      text << in.rdbuf();
      const std::string name = entry.path().string();
      const std::string toml = text.str();
      const Policy policy = loaded(toml, name);
      const SnapshotKey key{kBuild, name, toml};
      std::variant<Policy, std::string> decoded = decode_policy_snapshot(encode_policy_snapshot(policy, key), key);
      ASSERT_EQ(decoded.index(), 0U) << entry.path() << ": " << std::get<1>(decoded);
      EXPECT_TRUE(std::get<0>(decoded) == policy) << entry.path();
      ++count;
    }
  }
  EXPECT_GT(count, 10);
}

TEST(PolicySnapshot, OnlyForItsBuildNameAndText) {
  const Policy policy = loaded(kEveryKey, "every.toml");
  const SnapshotKey key{kBuild, "every.toml", kEveryKey};
  const std::string bytes = encode_policy_snapshot(policy, key);
  const std::string edited = std::string(kEveryKey) + "\n";
  EXPECT_EQ(refusal(bytes, {"another build", "every.toml", kEveryKey}), "compiled by another build of the core");
  EXPECT_EQ(refusal(bytes, {kBuild, "other.toml", kEveryKey}), "compiled from another policy");
  EXPECT_EQ(refusal(bytes, {kBuild, "every.toml", edited}), "compiled from another policy");
  EXPECT_NE(snapshot_key_hash(key), snapshot_key_hash({kBuild, "every.toml", edited}));
  EXPECT_NE(snapshot_key_hash(key), snapshot_key_hash({"b", "every.toml", kEveryKey}));
  // The parts are framed: moving a byte from the name to the text is another key.
  EXPECT_NE(snapshot_key_hash({kBuild, "ab", "c"}), snapshot_key_hash({kBuild, "a", "bc"}));
}

TEST(PolicySnapshot, RefusesWhatIsNotAWholeSnapshot) {
  const Policy policy = loaded(kEveryKey, "every.toml");
  const SnapshotKey key{kBuild, "every.toml", kEveryKey};
  const std::string bytes = encode_policy_snapshot(policy, key);
  EXPECT_EQ(refusal("", key), "not a compiled policy");
  EXPECT_EQ(refusal("version = 1\n[defaults]\n", key), "not a compiled policy");
  std::string other_format = bytes;
  other_format[8] = 9;
  EXPECT_EQ(refusal(other_format, key), "written in format 9, where this build reads format 1");
  // Every cut, every byte changed, and a byte more: refused, never read past the end.
  for (std::size_t length = 0; length < bytes.size(); ++length) {
    EXPECT_NE(refusal(bytes.substr(0, length), key), "(decoded)") << "cut at " << length;
  }
  EXPECT_NE(refusal(bytes + "x", key), "(decoded)");
  for (std::size_t at = 0; at < bytes.size(); ++at) {
    std::string damaged = bytes;
    damaged[at] = static_cast<char>(damaged[at] ^ 0x5a);
    EXPECT_NE(refusal(damaged, key), "(decoded)") << "byte " << at << " changed";
  }
  std::string damaged = bytes;
  damaged[bytes.size() - 1] = static_cast<char>(damaged[bytes.size() - 1] ^ 1);
  EXPECT_EQ(refusal(damaged, key), "its checksum does not match: changed or damaged since it was written");
}

// Bytes behind a checksum that matches them (what the same user could write on purpose) are
// still read within bounds: each changed byte of the policy's part decodes or is refused.
TEST(PolicySnapshot, DamageBehindAMatchingChecksumIsReadWithinBounds) {
  const Policy policy = loaded(kEveryKey, "every.toml");
  const SnapshotKey key{kBuild, "every.toml", kEveryKey};
  const std::string bytes = encode_policy_snapshot(policy, key);
  const std::size_t body = 8 + 4 + 4 + kBuild.size() + 8 + 8;
  const std::size_t policy_part = body + 4 + key.source_name.size() + 4 + key.text.size();
  ASSERT_LT(policy_part, bytes.size());
  int refused = 0;
  for (std::size_t at = policy_part; at < bytes.size(); ++at) {
    for (const int value : {0x00, 0x01, 0x7f, 0x80, 0xff}) {
      std::string damaged = bytes;
      damaged[at] = static_cast<char>(value);
      const std::uint64_t checksum = snapshot_checksum(std::string_view(damaged).substr(body));
      for (int i = 0; i < 8; ++i) {
        damaged[body - 8 + i] = static_cast<char>((checksum >> (8 * i)) & 0xff);
      }
      refused += decode_policy_snapshot(damaged, key).index() == 1 ? 1 : 0;
    }
  }
  EXPECT_GT(refused, 0);
}

}  // namespace
}  // namespace tcptune::config
