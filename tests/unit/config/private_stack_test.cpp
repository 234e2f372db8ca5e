// run_on_private_stack: the call runs on a mapping of its own with an inaccessible page below,
// which is gone afterwards; an exception reaches the caller; a thread with the smallest stack
// can run a deep call through it.
#include "tcptune/config/private_stack.hpp"

#include <gtest/gtest.h>
#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>

namespace tcptune::config {
namespace {

constexpr std::size_t kStackBytes = std::size_t{1} << 20;

struct Mapping {
  std::uintptr_t begin = 0;
  std::uintptr_t end = 0;
  std::string protection;  // "rw-p", "---p"; empty when nothing is mapped at the address
};

Mapping mapping_at(std::uintptr_t address) {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    std::istringstream fields(line);
    std::string range;
    Mapping mapping;
    fields >> range >> mapping.protection;
    const std::size_t dash = range.find('-');
    mapping.begin = std::stoull(range.substr(0, dash), nullptr, 16);
    mapping.end = std::stoull(range.substr(dash + 1), nullptr, 16);
    if (address >= mapping.begin && address < mapping.end) {
      return mapping;
    }
  }
  return {};
}

bool is_mapped(std::uintptr_t address) {
  const auto page = static_cast<std::uintptr_t>(::getpagesize());
  unsigned char resident = 0;
  // mincore fails with ENOMEM on an address nothing is mapped at
  // NOLINTNEXTLINE(performance-no-int-to-ptr): an address that may no longer point anywhere
  return ::mincore(reinterpret_cast<void*>(address & ~(page - 1)), 1, &resident) == 0 || errno != ENOMEM;
}

// Recursion that touches about `depth` KiB of stack.
[[gnu::noinline]] int recurse(int depth) {
  volatile char frame[1024];
  frame[0] = static_cast<char>(depth);
  if (depth == 0) {
    return frame[0];
  }
  return recurse(depth - 1) + frame[0];
}

TEST(PrivateStack, RunsOnAMappingOfItsOwnWithAGuardPageAndUnmapsIt) {
  std::uintptr_t local = 0;
  Mapping stack;
  Mapping below;
  auto call = [&] {
    volatile int here = 0;
    local = reinterpret_cast<std::uintptr_t>(&here);
    stack = mapping_at(local);
    below = mapping_at(stack.begin - 1);
  };
  const auto outside = reinterpret_cast<std::uintptr_t>(&local);
  ASSERT_EQ(run_on_private_stack(kStackBytes, call), 0);
  ASSERT_NE(local, 0U);
  EXPECT_EQ(stack.protection, "rw-p");
  EXPECT_TRUE(outside < stack.begin || outside >= stack.end) << "ran on the caller's stack";
  EXPECT_LE(local - stack.begin, kStackBytes) << "the stack is larger than asked";
  EXPECT_EQ(below.protection, "---p") << "no inaccessible page below the stack";
  EXPECT_FALSE(is_mapped(local)) << "the stack is still mapped after the call";
}

TEST(PrivateStack, ManyCallsLeaveNothingMapped) {
  std::uintptr_t first = 0;
  for (int i = 0; i < 1000; ++i) {
    auto call = [&] {
      volatile int here = 0;
      if (first == 0) {
        first = reinterpret_cast<std::uintptr_t>(&here);
      }
    };
    ASSERT_EQ(run_on_private_stack(kStackBytes, call), 0);
  }
  EXPECT_FALSE(is_mapped(first));
}

TEST(PrivateStack, AnExceptionReachesTheCaller) {
  auto call = [] { throw std::runtime_error("thrown on the private stack"); };
  EXPECT_THROW((void)run_on_private_stack(kStackBytes, call), std::runtime_error);
  int after = 0;
  auto next = [&] { after = 1; };
  EXPECT_EQ(run_on_private_stack(kStackBytes, next), 0);
  EXPECT_EQ(after, 1);
}

TEST(PrivateStack, MeasuresWhatTheCallTouched) {
  std::size_t shallow = 0;
  std::size_t deep = 0;
  int result = 0;
  auto small = [&] { result = recurse(1); };
  auto large = [&] { result = recurse(256); };
  ASSERT_EQ(run_on_private_stack(kStackBytes, small, &shallow), 0);
  ASSERT_EQ(run_on_private_stack(kStackBytes, large, &deep), 0);
  EXPECT_LT(shallow, std::size_t{64} << 10);
  EXPECT_GE(deep, std::size_t{256} << 10);
  EXPECT_LE(deep, kStackBytes);
}

TEST(PrivateStack, AMappingThatFailsIsReportedAndNothingRuns) {
  bool ran = false;
  auto call = [&] { ran = true; };
  EXPECT_EQ(run_on_private_stack(std::size_t{1} << 62, call), ENOMEM);
  EXPECT_FALSE(ran);
}

// A thread with the smallest stack glibc allows runs 512 KiB of recursion through it.
TEST(PrivateStack, AThreadWithTheSmallestStackRunsADeepCall) {
  struct Outcome {
    int error = -1;
    int result = 0;
  } outcome;
  pthread_attr_t attributes;
  ASSERT_EQ(pthread_attr_init(&attributes), 0);
  ASSERT_EQ(pthread_attr_setstacksize(&attributes, static_cast<std::size_t>(sysconf(_SC_THREAD_STACK_MIN))), 0);
  pthread_t thread;
  ASSERT_EQ(pthread_create(
                &thread, &attributes,
                [](void* argument) -> void* {
                  auto* out = static_cast<Outcome*>(argument);
                  auto deep = [out] { out->result = recurse(512); };
                  out->error = run_on_private_stack(kStackBytes, deep);
                  return nullptr;
                },
                &outcome),
            0);
  ASSERT_EQ(pthread_join(thread, nullptr), 0);
  (void)pthread_attr_destroy(&attributes);
  EXPECT_EQ(outcome.error, 0);
  EXPECT_NE(outcome.result, 0);
}

}  // namespace
}  // namespace tcptune::config
