// Only a regular file of at most kMaxPolicyBytes is a policy: a FIFO, a directory, a device
// or an oversized file is an error naming the path, and none of them blocks or reads on.
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>

#include "tcptune/config/policy_loader.hpp"

namespace tcptune::config {
namespace {

using namespace std::chrono_literals;

class PolicyFile : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("tcptune-policy-file-" + std::to_string(getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  std::string write(const std::string& name, const std::string& text) const {
    std::ofstream(path(name), std::ios::binary) << text;
    return path(name);
  }

  // The error of loading `file`, or "(loaded)". A load still running after 5 s fails the test:
  // a FIFO is released by opening it for writing; anything else (/dev/zero, read without end)
  // ends the test program rather than hang it and take the machine's memory.
  static std::string error_of(const std::string& file) {
    auto loading = std::async(std::launch::async, [file] { return load_policy_file(file); });
    if (loading.wait_for(5s) != std::future_status::ready) {
      ADD_FAILURE() << file << ": load_policy_file blocked";
      const int writer = ::open(file.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
      if (writer >= 0) {
        ::close(writer);
      }
      if (loading.wait_for(1s) != std::future_status::ready) {
        std::fprintf(stderr, "%s: load_policy_file still running; giving up\n", file.c_str());
        std::_Exit(1);
      }
    }
    const LoadResult result = loading.get();
    return result.ok() ? "(loaded)" : result.error().to_string();
  }

  std::filesystem::path dir_;
};

// A valid policy of exactly `size` bytes: [defaults] then comment lines.
std::string policy_of_size(std::size_t size) {
  std::string text = "[defaults]\nnodelay = \"on\"\n";
  while (text.size() < size) {
    text += "# padding\n";
  }
  text.resize(size);
  return text;
}

TEST_F(PolicyFile, FifoIsRefusedWithoutBlocking) {
  ASSERT_EQ(::mkfifo(path("policy.fifo").c_str(), 0600), 0);
  EXPECT_EQ(error_of(path("policy.fifo")), path("policy.fifo") + ": a FIFO, not a regular file");
}

TEST_F(PolicyFile, DirectoryIsRefused) {
  EXPECT_EQ(error_of(dir_.string()), dir_.string() + ": a directory, not a regular file");
}

TEST_F(PolicyFile, DevicesAreRefused) {
  EXPECT_EQ(error_of("/dev/null"), "/dev/null: a character device, not a regular file");
  EXPECT_EQ(error_of("/dev/zero"), "/dev/zero: a character device, not a regular file");
}

TEST_F(PolicyFile, SocketIsRefused) {
  const int listener = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  const std::string name = path("policy.sock");
  ASSERT_LT(name.size(), sizeof(address.sun_path));
  name.copy(address.sun_path, name.size());
  ASSERT_EQ(::bind(listener, reinterpret_cast<const sockaddr*>(&address), sizeof(address)), 0);
  EXPECT_EQ(error_of(name), name + ": a socket, not a regular file");
  ::close(listener);
}

TEST_F(PolicyFile, SizeBound) {
  EXPECT_EQ(error_of(write("at-limit.toml", policy_of_size(kMaxPolicyBytes))), "(loaded)");
  const std::string over = write("over.toml", policy_of_size(kMaxPolicyBytes + 1));
  EXPECT_EQ(error_of(over), over + ": 1048577 bytes, more than the 1 MiB a policy may have");
}

// /proc files say st_size 0: the loader reads to the end (within the bound) instead of trusting it.
TEST_F(PolicyFile, ReadsPastAZeroStSize) {
  const std::string error = error_of("/proc/self/status");
  EXPECT_NE(error.find("/proc/self/status:1:"), std::string::npos) << error;  // parsed, not empty
}

TEST_F(PolicyFile, InlinePolicyIsBoundToo) {
  const std::string at_limit = policy_of_size(kMaxPolicyBytes);
  EXPECT_TRUE(load_discovered({PolicySource::Kind::env_inline, at_limit, {}}).ok());
  const LoadResult over = load_discovered({PolicySource::Kind::env_inline, at_limit + "#", {}});
  ASSERT_FALSE(over.ok());
  EXPECT_EQ(over.error().to_string(), "TCPTUNE_POLICY_TOML: 1048577 bytes, more than the 1 MiB a policy may have");
}

// /etc/tcptune/policy.toml is looked for without opening it, so a FIFO there cannot block
// discovery; loading it is then the usual error.
TEST_F(PolicyFile, SystemPathFifoDoesNotBlockDiscovery) {
  ::unsetenv("TCPTUNE_POLICY");
  ::unsetenv("TCPTUNE_POLICY_TOML");
  const std::string fifo = path("system.fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  auto discovering = std::async(std::launch::async, [fifo] { return discover_policy_source(false, fifo.c_str()); });
  if (discovering.wait_for(5s) != std::future_status::ready) {
    ADD_FAILURE() << "discover_policy_source blocked on a FIFO";
    ::close(::open(fifo.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC));
  }
  const PolicySource source = discovering.get();
  EXPECT_EQ(source.kind, PolicySource::Kind::system_file);
  EXPECT_EQ(error_of(fifo), fifo + ": a FIFO, not a regular file");
}

}  // namespace
}  // namespace tcptune::config
