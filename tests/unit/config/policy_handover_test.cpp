// A process loads the policy an earlier one compiled, for exactly the same text, from a place
// only its user can write; anything else about the snapshot or its directory falls back to
// parsing the text, saying why, and leaves no descriptor open.
#include "tcptune/config/policy_handover.hpp"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace tcptune::config {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kBuild = "build-id-of-this-test";
constexpr const char* kPolicy = "version = 1\n[defaults]\nnodelay = \"on\"\n[[rule]]\nmatch = { port = 6379 }\n";

int open_descriptors() {
  int count = 0;
  for ([[maybe_unused]] const auto& entry : fs::directory_iterator("/proc/self/fd")) {
    ++count;
  }
  return count;
}

class PolicyHandover : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("tcptune-handover-" + std::to_string(getpid()));
    fs::remove_all(root_);
    fs::create_directories(root_ / "runtime");
    fs::permissions(root_ / "runtime", fs::perms::owner_all);
    policy_file_ = (root_ / "policy.toml").string();
    write_policy(kPolicy);
    runtime_dir_ = (root_ / "runtime").string();
    place_.runtime_dir = runtime_dir_.c_str();
    place_.euid = geteuid();
    place_.run_user = "/nonexistent";
    place_.tmp_dir = root_.c_str();
  }
  void TearDown() override { fs::remove_all(root_); }

  void write_policy(const std::string& text) const { std::ofstream(policy_file_, std::ios::trunc) << text; }

  [[nodiscard]] PolicySource file_source() const { return {PolicySource::Kind::env_path, policy_file_, {}}; }

  HandedOverPolicy load() const {
    const int before = open_descriptors();
    HandedOverPolicy handed = load_handed_over(file_source(), kBuild, place_);
    EXPECT_EQ(open_descriptors(), before) << "a descriptor was left open";
    return handed;
  }

  [[nodiscard]] std::string store_dir() const { return runtime_dir_ + "/tcptune"; }

  fs::path root_;
  std::string policy_file_;
  std::string runtime_dir_;
  SnapshotStorePlace place_;
};

TEST_F(PolicyHandover, SecondProcessLoadsTheFirstOnesSnapshot) {
  const HandedOverPolicy first = load();
  ASSERT_TRUE(first.loaded.ok()) << first.loaded.error().to_string();
  EXPECT_EQ(first.from, HandedOverPolicy::From::text);
  EXPECT_EQ(first.complaint, "");
  ASSERT_NE(first.snapshot, "") << first.note;
  EXPECT_EQ(fs::path(first.snapshot).parent_path(), store_dir());
  struct stat dir {};
  struct stat file {};
  ASSERT_EQ(::stat(store_dir().c_str(), &dir), 0);
  ASSERT_EQ(::stat(first.snapshot.c_str(), &file), 0);
  EXPECT_EQ(dir.st_mode & 07777, 0700U);
  EXPECT_EQ(file.st_mode & 077, 0U);

  const HandedOverPolicy second = load();
  ASSERT_TRUE(second.loaded.ok());
  EXPECT_EQ(second.from, HandedOverPolicy::From::snapshot);
  EXPECT_EQ(second.snapshot, first.snapshot);
  EXPECT_EQ(second.complaint, "");
  EXPECT_TRUE(second.loaded.policy() == first.loaded.policy());
  EXPECT_EQ(second.loaded.policy().source, policy_file_);
}

TEST_F(PolicyHandover, AChangedPolicyIsParsedAgain) {
  ASSERT_EQ(load().from, HandedOverPolicy::From::text);
  write_policy(std::string(kPolicy) + "[[rule]]\nmatch = { port = 80 }\nnodelay = \"off\"\n");
  const HandedOverPolicy changed = load();
  ASSERT_TRUE(changed.loaded.ok());
  EXPECT_EQ(changed.from, HandedOverPolicy::From::text);
  EXPECT_EQ(changed.loaded.policy().rules.size(), 2U);
  EXPECT_EQ(changed.complaint, "");
  EXPECT_EQ(load().from, HandedOverPolicy::From::snapshot);
  // Back to the first text: its snapshot is still there.
  write_policy(kPolicy);
  const HandedOverPolicy back = load();
  EXPECT_EQ(back.from, HandedOverPolicy::From::snapshot);
  EXPECT_EQ(back.loaded.policy().rules.size(), 1U);
}

TEST_F(PolicyHandover, AnotherNameOrBuildDoesNotShareIt) {
  ASSERT_EQ(load().from, HandedOverPolicy::From::text);
  const HandedOverPolicy named =
      load_handed_over({PolicySource::Kind::env_path, policy_file_, "/etc/named.toml"}, kBuild, place_);
  EXPECT_EQ(named.from, HandedOverPolicy::From::text);
  EXPECT_EQ(named.loaded.policy().source, "/etc/named.toml");
  EXPECT_EQ(load_handed_over(file_source(), "another build", place_).from, HandedOverPolicy::From::text);
  const HandedOverPolicy inline_text = load_handed_over({PolicySource::Kind::env_inline, kPolicy, {}}, kBuild, place_);
  EXPECT_EQ(inline_text.from, HandedOverPolicy::From::text);
  EXPECT_EQ(load_handed_over({PolicySource::Kind::env_inline, kPolicy, {}}, kBuild, place_).from,
            HandedOverPolicy::From::snapshot);
}

TEST_F(PolicyHandover, ATamperedSnapshotIsRefusedOnceAndReplaced) {
  const std::string snapshot = load().snapshot;
  ASSERT_NE(snapshot, "");
  {
    std::fstream file(snapshot, std::ios::in | std::ios::out | std::ios::binary);
    file.seekp(-1, std::ios::end);
    file.put('\x7f');
  }
  const HandedOverPolicy tampered = load();
  ASSERT_TRUE(tampered.loaded.ok());
  EXPECT_EQ(tampered.from, HandedOverPolicy::From::text);
  EXPECT_EQ(tampered.complaint, "ignoring the compiled policy " + snapshot +
                                    ": its checksum does not match: changed or damaged since it was written; parsing " +
                                    policy_file_);
  const HandedOverPolicy after = load();
  EXPECT_EQ(after.from, HandedOverPolicy::From::snapshot);
  EXPECT_EQ(after.complaint, "");
}

TEST_F(PolicyHandover, ASnapshotOthersMayWriteIsRefused) {
  const std::string snapshot = load().snapshot;
  ASSERT_EQ(::chmod(snapshot.c_str(), 0622), 0);
  const HandedOverPolicy refused = load();
  EXPECT_EQ(refused.from, HandedOverPolicy::From::text);
  EXPECT_NE(refused.complaint.find("writable by others than its owner (mode 0622)"), std::string::npos)
      << refused.complaint;
}

TEST_F(PolicyHandover, ASymbolicLinkIsNotFollowed) {
  const std::string snapshot = load().snapshot;
  const std::string elsewhere = (root_ / "elsewhere").string();
  fs::rename(snapshot, elsewhere);
  fs::create_symlink(elsewhere, snapshot);
  const HandedOverPolicy refused = load();
  EXPECT_EQ(refused.from, HandedOverPolicy::From::text);
  EXPECT_NE(refused.complaint.find(": a symbolic link; parsing"), std::string::npos) << refused.complaint;
}

TEST_F(PolicyHandover, AForeignOwnedSnapshotOrDirectoryIsRefused) {
  if (geteuid() != 0) {
    GTEST_SKIP() << "making a file of another user needs root";
  }
  const std::string snapshot = load().snapshot;
  ASSERT_EQ(::chown(snapshot.c_str(), 65534, 65534), 0);
  const HandedOverPolicy file_refused = load();
  EXPECT_EQ(file_refused.from, HandedOverPolicy::From::text);
  EXPECT_NE(file_refused.complaint.find("owned by uid 65534, not by this user (uid 0)"), std::string::npos)
      << file_refused.complaint;
  // Replaced by this user's own, which the next process uses.
  EXPECT_EQ(load().from, HandedOverPolicy::From::snapshot);

  ASSERT_EQ(::chown(store_dir().c_str(), 65534, 65534), 0);
  const HandedOverPolicy dir_refused = load();
  EXPECT_EQ(dir_refused.from, HandedOverPolicy::From::text);
  EXPECT_EQ(dir_refused.snapshot, "");
  EXPECT_EQ(dir_refused.complaint,
            "not using " + store_dir() +
                " for compiled policies: owned by uid 65534, not by this user (uid 0); parsing " + policy_file_);
}

TEST_F(PolicyHandover, ADirectoryOthersMayWriteIsRefused) {
  ASSERT_EQ(load().from, HandedOverPolicy::From::text);
  ASSERT_EQ(::chmod(store_dir().c_str(), 0777), 0);
  const HandedOverPolicy refused = load();
  EXPECT_EQ(refused.from, HandedOverPolicy::From::text);
  EXPECT_NE(refused.complaint.find("writable by others than its owner (mode 0777)"), std::string::npos)
      << refused.complaint;
}

TEST_F(PolicyHandover, WhereTheStoreIs) {
  // XDG_RUNTIME_DIR of another user (a process that changed user and kept the environment):
  // not used, and nothing made in it; a per-user directory in TMPDIR instead.
  const std::string foreign = (root_ / "foreign").string();
  fs::create_directories(foreign);
  if (geteuid() == 0) {
    ASSERT_EQ(::chown(foreign.c_str(), 65534, 65534), 0);
    place_.runtime_dir = foreign.c_str();
    const HandedOverPolicy handed = load();
    EXPECT_EQ(fs::path(handed.snapshot).parent_path(), root_ / ("tcptune-" + std::to_string(geteuid())));
    EXPECT_FALSE(fs::exists(foreign + "/tcptune"));
  }
  place_.runtime_dir = nullptr;
  place_.run_user = runtime_dir_.c_str();  // as /run/user, holding no directory named after the uid
  EXPECT_EQ(fs::path(load().snapshot).parent_path(), root_ / ("tcptune-" + std::to_string(geteuid())));

  const std::string chosen = (root_ / "chosen").string();
  place_.setting = chosen.c_str();
  EXPECT_EQ(fs::path(load().snapshot).parent_path(), chosen);

  place_.setting = "off";
  const HandedOverPolicy off = load();
  EXPECT_EQ(off.from, HandedOverPolicy::From::text);
  EXPECT_EQ(off.snapshot, "");
  EXPECT_EQ(off.note, "TCPTUNE_POLICY_CACHE=off");
  EXPECT_EQ(off.complaint, "");

  place_.setting = "relative/dir";
  const HandedOverPolicy relative = load();
  EXPECT_EQ(relative.from, HandedOverPolicy::From::text);
  EXPECT_EQ(relative.complaint,
            "TCPTUNE_POLICY_CACHE='relative/dir' is neither an absolute directory nor off; parsing " + policy_file_);

  // Nowhere to write (a missing parent): parsed, quietly.
  place_.setting = "/nonexistent/tcptune";
  const HandedOverPolicy nowhere = load();
  EXPECT_EQ(nowhere.from, HandedOverPolicy::From::text);
  EXPECT_TRUE(nowhere.loaded.ok());
  EXPECT_NE(nowhere.note, "");
}

TEST_F(PolicyHandover, ABadPolicyIsNeverKept) {
  write_policy("[defaults]\nnodelya = \"on\"\n");
  const HandedOverPolicy bad = load();
  ASSERT_FALSE(bad.loaded.ok());
  EXPECT_EQ(bad.snapshot, "");
  EXPECT_EQ(bad.loaded.error().to_string(),
            policy_file_ + ":2:1: unknown key 'nodelya' in [defaults]; did you mean 'nodelay'?");
  EXPECT_TRUE(fs::is_empty(store_dir()));
}

TEST_F(PolicyHandover, NoBuildIdNoSnapshot) {
  const HandedOverPolicy handed = load_handed_over(file_source(), "", place_);
  EXPECT_TRUE(handed.loaded.ok());
  EXPECT_EQ(handed.snapshot, "");
  EXPECT_FALSE(fs::exists(store_dir()));
}

}  // namespace
}  // namespace tcptune::config
