// keep_warm does nothing where the namespace restarts no window after idle.
#include "tcptune/config/keep_warm_outlook.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "tcptune/config/policy_loader.hpp"

namespace tcptune::config {
namespace {

Tuning warm(const std::string& extra = "") {
  const LoadResult result = load_policy_text("[defaults]\nkeep_warm = { heartbeat = \"\\n\" }\n" + extra, "t.toml");
  EXPECT_TRUE(result.ok()) << result.error().to_string();
  return result.ok() ? result.policy().defaults : Tuning{};
}

TEST(KeepWarmOutlook, DefaultBbrWithoutCongestion) {
  const std::string why = keep_warm_futility(warm(), IdleRestart{"bbr", true});
  EXPECT_NE(why.find("this namespace's default (net.ipv4.tcp_congestion_control) is bbr"), std::string::npos) << why;
  EXPECT_EQ(keep_warm_futility(warm("congestion = \"cubic\"\n"), IdleRestart{"bbr", true}), "");
  EXPECT_EQ(keep_warm_futility(warm(), IdleRestart{"cubic", true}), "");
}

TEST(KeepWarmOutlook, BbrSetByThePolicy) {
  const std::string why = keep_warm_futility(warm("congestion = \"bbr\"\n"), IdleRestart{"cubic", true});
  EXPECT_NE(why.find("congestion = \"bbr\" keeps the window across idle"), std::string::npos) << why;
}

TEST(KeepWarmOutlook, NoRestartAfterIdle) {
  const std::string why = keep_warm_futility(warm("congestion = \"cubic\"\n"), IdleRestart{"cubic", false});
  EXPECT_NE(why.find("tcp_slow_start_after_idle is 0"), std::string::npos) << why;
  EXPECT_EQ(keep_warm_futility(Tuning{}, IdleRestart{"bbr", false}), "");    // no keep_warm: nothing to say
  EXPECT_EQ(keep_warm_futility(warm(), IdleRestart{"", std::nullopt}), "");  // unreadable: no claim
}

TEST(KeepWarmOutlook, ReadFromProcSys) {
  const std::filesystem::path root = std::filesystem::temp_directory_path() / "tcptune-keep-warm-outlook";
  std::filesystem::create_directories(root / "net/ipv4");
  std::ofstream(root / "net/ipv4/tcp_congestion_control") << "bbr\n";
  std::ofstream(root / "net/ipv4/tcp_slow_start_after_idle") << "0\n";
  const IdleRestart host = read_idle_restart(root.string());
  EXPECT_EQ(host.default_congestion, "bbr");
  EXPECT_EQ(host.slow_start_after_idle, false);
  std::filesystem::remove_all(root);
  EXPECT_FALSE(read_idle_restart(root.string()).slow_start_after_idle.has_value());
}

}  // namespace
}  // namespace tcptune::config
