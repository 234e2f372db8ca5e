#include "program_launch.hpp"

#include <sys/stat.h>

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

namespace tcptune::cli {
namespace {

namespace fs = std::filesystem;

TEST(ProgramLaunch, TheShimGoesFirstOnce) {
  const std::string shim = "/opt/lib/libtcptune.so";
  EXPECT_EQ(preload_with_shim_first(shim, nullptr), shim);
  EXPECT_EQ(preload_with_shim_first(shim, ""), shim);
  EXPECT_EQ(preload_with_shim_first(shim, "/lib/a.so"), shim + ":/lib/a.so");
  EXPECT_EQ(preload_with_shim_first(shim, "/lib/a.so /lib/b.so"), shim + ":/lib/a.so:/lib/b.so");
  const std::string with_shim = "/lib/a.so:" + shim + "::/lib/b.so";
  EXPECT_EQ(preload_with_shim_first(shim, with_shim.c_str()), shim + ":/lib/a.so:/lib/b.so");
}

TEST(ProgramLaunch, TheShimComesOutOfAnInheritedPreload) {
  EXPECT_EQ(preload_without_shim(nullptr), std::nullopt);
  EXPECT_EQ(preload_without_shim("/lib/a.so /lib/b.so"), std::nullopt);
  EXPECT_EQ(preload_without_shim("/opt/tcptune/libtcptune.so"), std::string());
  EXPECT_EQ(preload_without_shim("/lib/a.so:/opt/tcptune/libtcptune.so /lib/b.so::libtcptune.so"),
            std::string("/lib/a.so:/lib/b.so"));
  // Only that file name: another library of a similar name stays.
  EXPECT_EQ(preload_without_shim("/lib/libtcptune.so.1:/x/libtcptune.so"), std::string("/lib/libtcptune.so.1"));
}

class ResolveCommand : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("tcptune-cli-test-path-" + std::to_string(getpid()));
    fs::create_directories(dir_);
    const char* path = std::getenv("PATH");
    saved_path_ = path != nullptr ? path : "";
    setenv("PATH", (dir_.string() + ":/usr/bin:/bin").c_str(), 1);
  }
  void TearDown() override {
    setenv("PATH", saved_path_.c_str(), 1);
    fs::remove_all(dir_);
  }
  void write(const std::string& name, mode_t mode) {
    std::ofstream(dir_ / name) << "echo\n";
    ASSERT_EQ(chmod((dir_ / name).c_str(), mode), 0);
  }
  fs::path dir_;
  std::string saved_path_;
};

TEST_F(ResolveCommand, SearchesPathAsExecvpDoes) {
  write("tool-x", 0755);
  bool not_executable = true;
  EXPECT_EQ(resolve_command("tool-x", not_executable), (dir_ / "tool-x").string());
  EXPECT_FALSE(not_executable);
  EXPECT_EQ(resolve_command("./relative/tool", not_executable), "./relative/tool");  // a slash: taken as is
}

TEST_F(ResolveCommand, AFileWithoutExecutePermission) {
  write("tool-y", 0644);
  bool not_executable = false;
  EXPECT_EQ(resolve_command("tool-y", not_executable), "");
  EXPECT_TRUE(not_executable);
  EXPECT_EQ(resolve_command("no-such-tool-xyz", not_executable), "");
  EXPECT_FALSE(not_executable);
}

}  // namespace
}  // namespace tcptune::cli
