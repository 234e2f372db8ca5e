// The table of tuning keys is the one list: the loader's accepted keys, overlay() and the
// key table of docs/policy.md all follow it.
#include "tcptune/config/tuning_keys.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "tcptune/config/policy_loader.hpp"

namespace tcptune::config {
namespace {

std::set<std::string> table_names() {
  std::set<std::string> names;
  for (const TuningKey& key : tuning_keys()) {
    names.emplace(key.name);
  }
  return names;
}

std::string load_error(const std::string& text) {
  const LoadResult result = load_policy_text(text, "t.toml");
  return result.ok() ? "(loaded)" : result.error().to_string();
}

// docs/policy.md's "## Keys" table: the first column's `name` of each row; the [log] ones are
// "[log] name".
std::set<std::string> documented_keys(bool log_keys) {
  std::ifstream in(std::string(TCPTUNE_SOURCE_DIR) + "/docs/policy.md");
  EXPECT_TRUE(in.is_open()) << "docs/policy.md";
  std::string line;
  bool in_keys = false;
  std::set<std::string> keys;
  while (std::getline(in, line)) {
    if (line.rfind("#", 0) == 0) {
      in_keys = line == "## Keys";
      continue;
    }
    if (in_keys && line.rfind("| `", 0) == 0) {
      const std::size_t end = line.find('`', 3);
      const std::string key = line.substr(3, end - 3);
      if (key.rfind("[log] ", 0) == 0) {
        if (log_keys) {
          keys.insert(key.substr(6));
        }
      } else if (!log_keys) {
        keys.insert(key);
      }
    }
  }
  return keys;
}

TEST(TuningKeys, NamesAreUniqueAndComplete) {
  EXPECT_EQ(table_names().size(), tuning_keys().size());
  for (const TuningKey& key : tuning_keys()) {
    EXPECT_NE(key.read, nullptr) << key.name;
    EXPECT_NE(key.overlay, nullptr) << key.name;
    EXPECT_NE(key.explain, nullptr) << key.name;
  }
}

TEST(TuningKeys, DocumentedKeyTableMatchesTheCode) {
  EXPECT_EQ(documented_keys(false), table_names());
}

// Every [log] key docs/policy.md lists is one the loader knows: a wrong value gets a message about
// the value, not "unknown key".
TEST(TuningKeys, DocumentedLogKeysAreKnown) {
  const std::set<std::string> keys = documented_keys(true);
  EXPECT_GE(keys.size(), 11U);
  for (const std::string& key : keys) {
    const std::string error = load_error("[log]\n" + key + " = {}\n");
    EXPECT_EQ(error.find("unknown key"), std::string::npos) << key << ": " << error;
    EXPECT_NE(error, "(loaded)") << key;
  }
}

// Every key of the table is accepted in [defaults] and [[rule]]: misspelt by one letter, each is
// the suggestion.
TEST(TuningKeys, LoaderAcceptsExactlyTheTable) {
  for (const TuningKey& key : tuning_keys()) {
    const std::string misspelt = std::string(key.name) + "x";
    EXPECT_EQ(
        load_error("[defaults]\n" + misspelt + " = 1\n"),
        "t.toml:2:1: unknown key '" + misspelt + "' in [defaults]; did you mean '" + std::string(key.name) + "'?");
    EXPECT_EQ(load_error("[[rule]]\n" + misspelt + " = 1\n"),
              "t.toml:2:1: unknown key '" + misspelt + "' in [[rule]]; did you mean '" + std::string(key.name) + "'?");
  }
  // A rule's own key is not one of [defaults]'s: the error says where it goes.
  EXPECT_EQ(load_error("[defaults]\nname = \"x\"\n"),
            "t.toml:2:1: unknown key 'name' in [defaults]; put it in a [[rule]] or in a sockopt = [{ ... }] entry");
}

// A rule's key replaces the default's; an unset one inherits it; sockopts add up.
TEST(TuningKeys, OverlayFollowsTheTable) {
  const LoadResult result = load_policy_text(R"(
[defaults]
nodelay = "on"
quickack = true
tos = 16
sockopt = [{ level = "IPPROTO_TCP", name = "TCP_MAXSEG", value = 1400 }]
[[rule]]
nodelay = "off"
callsite = true
sockopt = [{ level = "SOL_SOCKET", name = "SO_MARK", value = 7 }]
)",
                                             "t.toml");
  ASSERT_TRUE(result.ok()) << result.error().to_string();
  const Tuning& effective = result.policy().rules.at(0).effective;
  EXPECT_EQ(effective.nodelay, NodelayMode::off);
  EXPECT_EQ(effective.quickack, true);
  EXPECT_EQ(effective.tos, 16);
  EXPECT_EQ(effective.callsite, true);
  ASSERT_EQ(effective.sockopts.size(), 2U);
  EXPECT_EQ(effective.sockopts[0].option_name, "TCP_MAXSEG");
  EXPECT_EQ(effective.sockopts[1].option_name, "SO_MARK");
}

TEST(TuningKeys, ExplanationsNameTheirKey) {
  Tuning tuning;
  tuning.nodelay = NodelayMode::force;
  tuning.tos = 16;
  tuning.quickack = false;  // nothing to say: the shim leaves TCP_QUICKACK alone
  std::string all;
  for (const TuningKey& key : tuning_keys()) {
    all += key.explain(tuning, HostOutlook{});
  }
  EXPECT_EQ(all,
            "  nodelay: force (TCP_NODELAY set; the app's TCP_NODELAY=0 and TCP_CORK=1 become logged no-ops)\n"
            "  tos: 0x10\n");
}

}  // namespace
}  // namespace tcptune::config
