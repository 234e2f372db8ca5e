#include "preset_search.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace tcptune::cli {
namespace {

namespace fs = std::filesystem;

class PresetSearch : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("tcptune-presets-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "sub.toml");  // a directory named like a preset is none
    for (const char* name : {"wan.toml", "lan.toml", ".hidden.toml", "notes.txt"}) {
      std::ofstream(dir_ / name) << "version = 1\n";
    }
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(PresetSearch, NamesAreTheTomlFilesSorted) {
  EXPECT_EQ(preset_names(dir_.string()), (std::vector<std::string>{"lan", "wan"}));
  EXPECT_TRUE(preset_names((dir_ / "missing").string()).empty());
}

TEST_F(PresetSearch, FindsANameWithOrWithoutItsSuffix) {
  EXPECT_EQ(find_preset(dir_.string(), "wan").path, (dir_ / "wan.toml").string());
  EXPECT_EQ(find_preset(dir_.string(), "wan.toml").path, (dir_ / "wan.toml").string());
}

TEST_F(PresetSearch, AnUnknownNameListsTheKnownOnes) {
  const PresetLookup found = find_preset(dir_.string(), "sub");
  EXPECT_TRUE(found.path.empty());
  EXPECT_EQ(found.problem, "no preset 'sub' in " + dir_.string() + " (the presets: lan, wan)");
}

TEST_F(PresetSearch, APathIsNoName) {
  for (const char* name : {"../wan", "/etc/passwd", ".hidden", "", ".toml", "a/wan"}) {
    const PresetLookup found = find_preset(dir_.string(), name);
    EXPECT_TRUE(found.path.empty()) << name;
    EXPECT_NE(found.problem.find("is not a preset name"), std::string::npos) << name << ": " << found.problem;
  }
}

TEST_F(PresetSearch, AMissingDirectoryIsNamed) {
  const PresetLookup found = find_preset((dir_ / "none").string(), "wan");
  EXPECT_TRUE(found.path.empty());
  EXPECT_EQ(found.problem.rfind("no presets directory " + (dir_ / "none").string(), 0), 0U) << found.problem;
}

TEST(PresetSearchInstalled, InTheBuildTreeIsTheSourcePresets) {
  // This test program is in BUILD/bin: BUILD/share/tcptune/presets links to config/presets.
  EXPECT_EQ(installed_presets_directory(), fs::canonical(TCPTUNE_SOURCE_DIR "/config/presets").string());
  EXPECT_FALSE(find_preset(installed_presets_directory(), "nodelay").path.empty());
}

}  // namespace
}  // namespace tcptune::cli
