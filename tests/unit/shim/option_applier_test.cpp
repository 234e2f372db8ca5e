// The applier's report for every way an option can end, with setsockopt made to fail on
// purpose through the socket-call seam: the status and errno callers act on, and the note.
#include "option_applier.hpp"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cerrno>
#include <string>

#include "socket_calls.hpp"
#include "tcptune/config/policy_loader.hpp"

namespace tcptune::shim {
namespace {

// Which (level, name) fails, and how.
struct Failure {
  int level = -1;
  int name = -1;
  int error = 0;
};
Failure g_failure;

int failing_setsockopt(int fd, int level, int name, const void* value, socklen_t length) noexcept {
  if (level == g_failure.level && name == g_failure.name) {
    errno = g_failure.error;
    return -1;
  }
  return ::setsockopt(fd, level, name, value, length);
}
int plain_getsockopt(int fd, int level, int name, void* value, socklen_t* length) noexcept {
  return ::getsockopt(fd, level, name, value, length);
}
constexpr SocketCalls kFailingCalls{failing_setsockopt, plain_getsockopt};

config::Tuning tuning_of(const char* defaults) {
  auto loaded = config::load_policy_text(std::string("[defaults]\n") + defaults, "test.toml");
  EXPECT_TRUE(loaded.ok()) << loaded.error().to_string();
  return loaded.policy().defaults;
}

class OptionApplier : public ::testing::Test {
 protected:
  void SetUp() override { fd_ = ::socket(AF_INET, SOCK_STREAM, 0); }
  void TearDown() override {
    ::close(fd_);
    g_failure = {};
  }
  const OptionReport& only(const ApplyReport& report, const std::string& name) {
    for (const OptionReport& option : report.options) {
      if (option.name == name) {
        return option;
      }
    }
    ADD_FAILURE() << name << " not in the report: " << report.to_string();
    static const OptionReport none;
    return none;
  }
  TuningOutcome apply_outcome(const config::Tuning& tuning, ApplyPhase phase) {
    return apply_tuning(fd_, app_, tuning, phase, host_);
  }
  ApplyReport apply(const config::Tuning& tuning, ApplyPhase phase) { return apply_outcome(tuning, phase).report; }
  int fd_ = -1;
  AppSettings app_;
  // Small limits and CAP_NET_ADMIN, whatever the host: every buffer branch is reachable.
  HostBufferFacts host_{{212'992, 131'072, 6'291'456}, {212'992, 16'384, 4'194'304}, true};
};

TEST_F(OptionApplier, AppliedOptionHasNoErrorAndNoNote) {
  const ApplyReport report = apply(tuning_of("nodelay = \"on\""), ApplyPhase::before_connect);
  const OptionReport& nodelay = only(report, "nodelay");
  EXPECT_EQ(nodelay.status, OptionStatus::applied);
  EXPECT_EQ(nodelay.error, 0);
  EXPECT_EQ(nodelay.effective, "1");
  EXPECT_FALSE(nodelay.refused());
}

TEST_F(OptionApplier, RefusedCallCarriesItsErrno) {
  g_failure = {IPPROTO_TCP, TCP_NODELAY, EINVAL};
  const ScopedSocketCalls calls(kFailingCalls);
  const OptionReport nodelay = only(apply(tuning_of("nodelay = \"on\""), ApplyPhase::before_connect), "nodelay");
  EXPECT_EQ(nodelay.status, OptionStatus::refused);
  EXPECT_EQ(nodelay.error, EINVAL);
  EXPECT_EQ(nodelay.note, "refused: Invalid argument");
  EXPECT_EQ(nodelay.effective, "0") << "read back from the kernel: not set";
  EXPECT_TRUE(nodelay.refused());
}

TEST_F(OptionApplier, CongestionNotPermittedAndNotAvailableAreToldApart) {
  const ScopedSocketCalls calls(kFailingCalls);
  g_failure = {IPPROTO_TCP, TCP_CONGESTION, EPERM};
  OptionReport congestion = only(apply(tuning_of("congestion = \"reno\""), ApplyPhase::before_connect), "congestion");
  EXPECT_EQ(congestion.status, OptionStatus::not_permitted);
  EXPECT_EQ(congestion.error, EPERM);
  EXPECT_NE(congestion.note.find("lacks CAP_NET_ADMIN"), std::string::npos) << congestion.note;
  g_failure = {IPPROTO_TCP, TCP_CONGESTION, ENOENT};
  congestion = only(apply(tuning_of("congestion = \"reno\""), ApplyPhase::before_connect), "congestion");
  EXPECT_EQ(congestion.status, OptionStatus::unavailable);
  EXPECT_NE(congestion.note.find("not available in this kernel"), std::string::npos) << congestion.note;
  g_failure = {IPPROTO_TCP, TCP_CONGESTION, EBUSY};
  congestion = only(apply(tuning_of("congestion = \"reno\""), ApplyPhase::before_connect), "congestion");
  EXPECT_EQ(congestion.status, OptionStatus::refused);
  EXPECT_EQ(congestion.note.rfind("refused: ", 0), 0U) << congestion.note;
}

TEST_F(OptionApplier, KeepaliveReportsTheFirstRefusalAmongItsCalls) {
  g_failure = {IPPROTO_TCP, TCP_KEEPCNT, EINVAL};
  const ScopedSocketCalls calls(kFailingCalls);
  const OptionReport keepalive =
      only(apply(tuning_of("keepalive = { idle = \"30s\", interval = \"5s\", count = 3 }"), ApplyPhase::before_connect),
           "keepalive");
  EXPECT_EQ(keepalive.status, OptionStatus::refused);
  EXPECT_EQ(keepalive.error, EINVAL);
  EXPECT_NE(keepalive.note.find("refused: Invalid argument"), std::string::npos) << keepalive.note;
}

TEST_F(OptionApplier, ForcedBufferRefusedFallsBackAndSaysSo) {
  g_failure = {SOL_SOCKET, SO_RCVBUFFORCE, EPERM};
  const ScopedSocketCalls calls(kFailingCalls);
  const OptionReport rcvbuf =
      only(apply(tuning_of("buffers = { rcvbuf = \"4 MiB\" }"), ApplyPhase::before_connect), "rcvbuf");
  EXPECT_NE(rcvbuf.note.find("SO_RCVBUFFORCE refused: Operation not permitted"), std::string::npos) << rcvbuf.note;
  EXPECT_EQ(rcvbuf.status, OptionStatus::refused);
  EXPECT_EQ(rcvbuf.error, EPERM);
}

TEST_F(OptionApplier, ABufferASysctlHoldsBelowTheRequestIsCapped) {
  host_.cap_net_admin = false;  // rmem_max 208 KiB, autotuning up to 6 MiB (kernel bytes)
  const OptionReport beyond =
      only(apply(tuning_of("buffers = { rcvbuf = \"4 MiB\" }"), ApplyPhase::before_connect), "rcvbuf");
  EXPECT_EQ(beyond.status, OptionStatus::capped) << beyond.note;
  EXPECT_TRUE(beyond.missed());
  EXPECT_FALSE(beyond.refused()) << "capped is no refusal: nothing to warn about per rule";
  const OptionReport reachable =
      only(apply(tuning_of("buffers = { rcvbuf = \"2 MiB\" }"), ApplyPhase::before_connect), "rcvbuf");
  EXPECT_EQ(reachable.status, OptionStatus::applied) << "autotuning reaches 2 x 2 MiB: " << reachable.note;
  EXPECT_FALSE(reachable.missed());
}

TEST_F(OptionApplier, OutcomeTellsTheCallerWhatToEnforce) {
  TuningOutcome outcome = apply_outcome(tuning_of("nodelay = \"force\"\nquickack = true"), ApplyPhase::before_connect);
  EXPECT_TRUE(outcome.veto_nodelay_off);
  EXPECT_TRUE(outcome.rearm_quickack);
  EXPECT_FALSE(outcome.veto_app_buffers);
  outcome =
      apply_outcome(tuning_of("buffers = { bandwidth = \"100 Mbit/s\", rtt = \"auto\" }\noverride_app_buffers = true"),
                    ApplyPhase::before_connect);
  EXPECT_TRUE(outcome.veto_app_buffers);
  EXPECT_TRUE(outcome.size_sndbuf_from_rtt);
}

TEST_F(OptionApplier, HeldAppBufferIsAppliedUnlessThePolicyOverridesIt) {
  app_.held_sndbuf = 65'536;
  OptionReport sndbuf = only(apply(tuning_of("nodelay = \"on\""), ApplyPhase::before_connect), "sndbuf");
  EXPECT_EQ(sndbuf.requested, "app 65536");
  EXPECT_EQ(sndbuf.effective, "131072") << "the kernel doubles it";
  sndbuf = only(apply(tuning_of("override_app_buffers = true"), ApplyPhase::before_connect), "sndbuf");
  EXPECT_NE(sndbuf.note.find("dropped"), std::string::npos) << sndbuf.note;
}

TEST_F(OptionApplier, AppOwnedAndInheritedOptionsAreLeftAlone) {
  app_.app_options = app_nodelay;
  EXPECT_EQ(only(apply(tuning_of("nodelay = \"on\""), ApplyPhase::before_connect), "nodelay").status,
            OptionStatus::left_alone);
  app_.app_options = 0;
  const OptionReport inherited = only(apply(tuning_of("nodelay = \"on\""), ApplyPhase::inherited_connected), "nodelay");
  EXPECT_EQ(inherited.status, OptionStatus::left_alone);
  EXPECT_FALSE(inherited.refused());
}

// "on-wait" sets nothing: Nagle stays on, and the caller is told to push on waits, except
// where the app owns TCP_NODELAY, the socket has it already, or the caller cannot see waits.
TEST_F(OptionApplier, OnWaitLeavesNagleOnAndAsksForPushes) {
  TuningOutcome outcome = apply_outcome(tuning_of("nodelay = \"on-wait\""), ApplyPhase::before_connect);
  EXPECT_TRUE(outcome.push_on_wait);
  EXPECT_FALSE(outcome.veto_nodelay_off);
  const OptionReport& nodelay = only(outcome.report, "nodelay");
  EXPECT_EQ(nodelay.requested, "on-wait");
  EXPECT_EQ(nodelay.status, OptionStatus::applied);
  EXPECT_EQ(nodelay.effective, "0") << "Nagle is on";

  app_.app_options = app_nodelay;
  outcome = apply_outcome(tuning_of("nodelay = \"on-wait\""), ApplyPhase::before_connect);
  EXPECT_FALSE(outcome.push_on_wait);
  EXPECT_EQ(only(outcome.report, "nodelay").status, OptionStatus::left_alone);
  app_.app_options = 0;

  app_.sees_waits = false;
  outcome = apply_outcome(tuning_of("nodelay = \"on-wait\""), ApplyPhase::before_connect);
  EXPECT_FALSE(outcome.push_on_wait);
  EXPECT_NE(only(outcome.report, "nodelay").note.find("supervised"), std::string::npos);
  app_.sees_waits = true;

  const int one = 1;
  ASSERT_EQ(::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one), 0);
  outcome = apply_outcome(tuning_of("nodelay = \"on-wait\""), ApplyPhase::accepted_inherited);
  EXPECT_FALSE(outcome.push_on_wait) << "TCP_NODELAY is on already (inherited from the listener)";
}

TEST_F(OptionApplier, RawSockoptRefusalIsStructuredToo) {
  g_failure = {IPPROTO_TCP, TCP_MAXSEG, EINVAL};
  const ScopedSocketCalls calls(kFailingCalls);
  const OptionReport raw =
      only(apply(tuning_of("sockopt = [{ level = \"IPPROTO_TCP\", name = \"TCP_MAXSEG\", value = 1200 }]"),
                 ApplyPhase::before_connect),
           "TCP_MAXSEG");
  EXPECT_EQ(raw.status, OptionStatus::refused);
  EXPECT_EQ(raw.error, EINVAL);
}

}  // namespace
}  // namespace tcptune::shim
