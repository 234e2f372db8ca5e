#include "tcptune/config/host_sysctl.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <unistd.h>

namespace tcptune::config {
namespace {

namespace fs = std::filesystem;

class FakeProcSys : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("tcptune-sysctl-" + std::to_string(::getpid()));
    fs::create_directories(root_ / "net/core");
    fs::create_directories(root_ / "net/ipv4");
    write("net/core/rmem_max", "212992\n");
    write("net/core/wmem_max", "425984\n");
    write("net/ipv4/tcp_rmem", "4096\t131072\t6291456\n");
    write("net/ipv4/tcp_wmem", "4096 16384 4194304\n");
  }
  void TearDown() override { fs::remove_all(root_); }
  void write(const char* name, const char* text) { std::ofstream(root_ / name) << text; }
  fs::path root_;
};

TEST_F(FakeProcSys, ReadsLimits) {
  const BufferLimits rcv = read_rcvbuf_limits(root_.string());
  EXPECT_EQ(rcv.core_max, 212992U);
  EXPECT_EQ(rcv.autotune_default, 131072U);
  EXPECT_EQ(rcv.autotune_max, 6291456U);
  const BufferLimits snd = read_sndbuf_limits(root_.string());
  EXPECT_EQ(snd.core_max, 425984U);
  EXPECT_EQ(snd.autotune_max, 4194304U);
  EXPECT_EQ(read_sysctl("net/core/rmem_max", root_.string()), "212992");
}

TEST_F(FakeProcSys, MissingIsZeroOrEmpty) {
  EXPECT_FALSE(read_sysctl("net/ipv4/nope", root_.string()).has_value());
  EXPECT_TRUE(read_sysctl_numbers("net/ipv4/nope", root_.string()).empty());
  fs::remove(root_ / "net/ipv4/tcp_rmem");
  EXPECT_EQ(read_rcvbuf_limits(root_.string()).autotune_max, 0U);
}

TEST(HostSysctl, RealProcIsReadable) {
  const auto value = read_sysctl("net/ipv4/tcp_slow_start_after_idle");
  ASSERT_TRUE(value.has_value());
  EXPECT_TRUE(*value == "0" || *value == "1");
}

}  // namespace
}  // namespace tcptune::config
