// The keep-warm worker's schedule: heartbeats in a row without TCP_INFO once the RTO has
// settled, and what keeps them off a closing connection or a descriptor number reused behind
// the hooks. The decisions are pure; the schedule runs over real loopback connections.
#include "keep_warm_scheduler.hpp"

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <optional>
#include <string>
#include <thread>

#include "fd_table.hpp"
#include "heartbeat_send.hpp"
#include "monotonic_clock.hpp"
#include "socket_calls.hpp"

namespace tcptune::shim {
namespace {

using namespace std::chrono_literals;

config::KeepWarm heartbeat(std::optional<config::Duration> interval = std::nullopt) {
  config::KeepWarm settings;
  settings.payload = "\n";
  settings.interval = interval;
  return settings;
}

TcpInfoSummary looked_at(std::uint32_t rto_us, std::uint32_t rtt_us) {
  TcpInfoSummary info;
  info.state = TCP_ESTABLISHED;
  info.rto_us = rto_us;
  info.rtt_us = rtt_us;
  info.snd_cwnd = 40;
  return info;
}

TEST(SettledRto, TheSameRtoAndAnRttWithinAMillisecond) {
  const LastLook nothing_read{};
  EXPECT_FALSE(same_rto(nothing_read, looked_at(384'000, 180'000)));
  const LastLook reference{334'000'000, 40, 384'000, 180'000};
  EXPECT_TRUE(same_rto(reference, looked_at(384'000, 180'000)));
  EXPECT_TRUE(same_rto(reference, looked_at(384'000, 180'000 + kSettledRttUs)));
  EXPECT_TRUE(same_rto(reference, looked_at(384'000, 180'000 - kSettledRttUs)));
  EXPECT_FALSE(same_rto(reference, looked_at(384'000, 180'000 + kSettledRttUs + 1)))
      << "the smoothed RTT still moving: the RTO may fall further";
  EXPECT_FALSE(same_rto(reference, looked_at(380'000, 180'000))) << "the RTO moved";
}

TEST(SettledRto, QuietHeartbeatsOnceTheRtoHeldStillOverEightOrWithAFixedInterval) {
  EXPECT_FALSE(quiet_allowed(0, heartbeat()));
  EXPECT_FALSE(quiet_allowed(kSettledHeartbeats - 1, heartbeat()));
  EXPECT_TRUE(quiet_allowed(kSettledHeartbeats, heartbeat()));
  EXPECT_TRUE(quiet_allowed(0, heartbeat(150ms))) << "a fixed interval does not follow the RTO";
  // After 8 samples with the smoothed RTT moving less than 1 ms, what the kernel's 1/8 gain
  // leaves it to move is under 1.5 ms.
  double left = 1.0 / (1.0 - std::pow(7.0 / 8.0, kSettledHeartbeats));
  EXPECT_LT(left, 1.55);
  // The variance term (gain 1/4) moving less than a jiffy over 8 samples: under 1.12 jiffies left.
  left = 1.0 / (1.0 - std::pow(3.0 / 4.0, kSettledHeartbeats));
  EXPECT_LT(left, 1.12);
}

TEST(DecideQuietHeartbeat, SendsOneIntervalAfterTheLastHeartbeat) {
  const LastLook look{150'000'000, 40, 200'000, 50};
  constexpr std::int64_t kSent = 1'000'000'000;
  const std::optional<HeartbeatDecision> due = decide_quiet_heartbeat(look, kSent, kSent + 150'000'000);
  ASSERT_TRUE(due.has_value());
  EXPECT_EQ(due->verdict, HeartbeatVerdict::send);
  EXPECT_EQ(due->recheck_ns, 150'000'000);
  EXPECT_EQ(decide_quiet_heartbeat(look, kSent, kSent + 150'000'000 - kSendEarlyNs)->verdict, HeartbeatVerdict::send)
      << "a wake-up a batch early sends rather than look again";
  const std::optional<HeartbeatDecision> early = decide_quiet_heartbeat(look, kSent, kSent + 100'000'000);
  ASSERT_TRUE(early.has_value());
  EXPECT_EQ(early->verdict, HeartbeatVerdict::not_yet);
  EXPECT_EQ(early->recheck_ns, 50'000'000);
}

TEST(DecideQuietHeartbeat, ALateWorkerSendsWhileTheWindowSurvivesAndAsksTheKernelOtherwise) {
  const LastLook look{150'000'000, 40, 200'000, 50};
  constexpr std::int64_t kSent = 1'000'000'000;
  // Halved once (40 -> 20) by the silence so far: the heartbeat keeps the rest.
  EXPECT_EQ(decide_quiet_heartbeat(look, kSent, kSent + 250'000'000)->verdict, HeartbeatVerdict::send);
  // Twice (40 -> 10): nothing left to keep; only TCP_INFO can say what the kernel did.
  EXPECT_FALSE(decide_quiet_heartbeat(look, kSent, kSent + 401'000'000).has_value());
}

// A loopback connection whose congestion window grew past the initial 10 segments, as a burst
// leaves it, with its accepted end.
class Loopback {
 public:
  Loopback() {
    listener_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof address;
    if (bind(listener_, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 || listen(listener_, 4) != 0 ||
        getsockname(listener_, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
      return;
    }
    client = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    const int segment = 1448;  // loopback's 64 KiB segments would never grow the window
    setsockopt(client, IPPROTO_TCP, TCP_MAXSEG, &segment, sizeof segment);
    if (connect(client, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
      return;
    }
    server = accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
  }
  ~Loopback() {
    for (const int fd : {client, server, listener_}) {
      if (fd >= 0) {
        close(fd);
      }
    }
  }
  Loopback(const Loopback&) = delete;
  Loopback& operator=(const Loopback&) = delete;

  // 64 KiB sent, received and acknowledged: the window is above 10 segments.
  bool warm_up() {
    const std::string burst(std::size_t{64} * 1024, 'x');
    if (send(client, burst.data(), burst.size(), 0) != static_cast<ssize_t>(burst.size())) {
      return false;
    }
    std::size_t received = 0;
    for (const auto deadline = std::chrono::steady_clock::now() + 5s; std::chrono::steady_clock::now() < deadline;) {
      received += drain();
      const std::optional<TcpInfoSummary> info = read_tcp_info(client);
      if (received == burst.size() && info && info->unacked == 0) {
        return info->snd_cwnd > kInitialWindowSegments;
      }
      std::this_thread::sleep_for(1ms);
    }
    return false;
  }

  // Bytes the accepted end has received since the last call.
  std::size_t drain() const {
    char buffer[65536];
    std::size_t total = 0;
    for (ssize_t n = 0; (n = recv(server, buffer, sizeof buffer, 0)) > 0;) {
      total += static_cast<std::size_t>(n);
    }
    return total;
  }

  int client = -1;
  int server = -1;

 private:
  int listener_ = -1;
};

// getsockopt(TCP_INFO) calls made through the shim's socket calls.
std::atomic<int> g_tcp_info_reads{0};
constexpr SocketCalls kCountingCalls{
    [](int fd, int level, int name, const void* value, socklen_t length) noexcept {
      return static_cast<int>(syscall(SYS_setsockopt, fd, level, name, value, length));
    },
    [](int fd, int level, int name, void* value, socklen_t* length) noexcept {
      if (level == IPPROTO_TCP && name == TCP_INFO) {
        g_tcp_info_reads.fetch_add(1);
      }
      return static_cast<int>(syscall(SYS_getsockopt, fd, level, name, value, length));
    },
};

// The worker's side of one kept-warm connection, over a slot set up as the hooks would.
class Schedule {
 public:
  Schedule(int fd, const HeartbeatTarget& target, config::Duration interval) : fd_(fd) {
    policy_.defaults.keep_warm = heartbeat(interval);
    SocketSlot* slot = fd_table().get(fd);
    slot->kind.store(FdKind::tcp);
    slot->keep_warm_gate.start_connection(false);
    slot->set_flag(flag_keep_warm);
    scheduler_.add({fd, slot->generation.load(), kRuleDefaults, target}, monotonic_ns());
  }
  ~Schedule() { fd_table().retire(fd_); }
  Schedule(const Schedule&) = delete;
  Schedule& operator=(const Schedule&) = delete;

  // Runs the worker's checks as they fall due, for `period`.
  void run_for(std::chrono::milliseconds period) {
    const std::int64_t end = monotonic_ns() + std::chrono::nanoseconds(period).count();
    for (std::int64_t now = monotonic_ns(); now < end; now = monotonic_ns()) {
      const std::int64_t next = scheduler_.run_due(now, policy_);
      std::this_thread::sleep_for(std::chrono::nanoseconds(std::clamp<std::int64_t>(next - now, 100'000, end - now)));
    }
  }
  [[nodiscard]] std::size_t connections() const { return scheduler_.size(); }
  [[nodiscard]] std::uint64_t heartbeats_counted() const {
    return fd_table().find(fd_)->stats.counters.heartbeats.load();
  }

 private:
  int fd_;
  config::Policy policy_;
  KeepWarmScheduler scheduler_;
};

TEST(KeepWarmScheduler, HeartbeatsGoMostlyWithoutTcpInfo) {
  Loopback link;
  ASSERT_TRUE(link.warm_up());
  HeartbeatTarget target;
  ASSERT_TRUE(take_heartbeat_target(link.client, target));
  const ScopedSocketCalls counting(kCountingCalls);
  g_tcp_info_reads = 0;
  Schedule schedule(link.client, target, 60ms);
  // A heartbeat every 60 ms (longer than loopback's 40 ms delayed ACK), 24 of them or 10 s.
  std::size_t received = 0;
  for (const auto deadline = std::chrono::steady_clock::now() + 10s;
       received < 24 && std::chrono::steady_clock::now() < deadline;) {
    schedule.run_for(300ms);
    received += link.drain();
  }
  EXPECT_GE(received, 24U);
  EXPECT_EQ(received, schedule.heartbeats_counted()) << "each one counted";
  EXPECT_LE(g_tcp_info_reads.load(), static_cast<int>(received) / (kQuietHeartbeats + 1) + 3)
      << "TCP_INFO once in " << kQuietHeartbeats + 1 << " heartbeats, " << received << " sent";
}

TEST(KeepWarmScheduler, NoHeartbeatAfterThePeerClosed) {
  Loopback link;
  ASSERT_TRUE(link.warm_up());
  HeartbeatTarget target;
  ASSERT_TRUE(take_heartbeat_target(link.client, target));
  Schedule schedule(link.client, target, 60ms);
  schedule.run_for(400ms);  // quiet heartbeats by now
  ASSERT_GT(link.drain(), 3U);
  close(link.server);  // everything read: a FIN, not a reset
  link.server = -1;
  std::this_thread::sleep_for(60ms);
  schedule.run_for(400ms);
  EXPECT_EQ(schedule.connections(), 0U) << "the FIN stops the heartbeats";
  const std::optional<TcpInfoSummary> info = read_tcp_info(link.client);
  ASSERT_TRUE(info.has_value());
  EXPECT_EQ(info->state, TCP_CLOSE_WAIT) << "no heartbeat went after the FIN to draw a reset";
  int error = 0;
  socklen_t length = sizeof error;
  ASSERT_EQ(getsockopt(link.client, SOL_SOCKET, SO_ERROR, &error, &length), 0);
  EXPECT_EQ(error, 0);
}

// The descriptor number taken over behind the hooks (a raw dup2, so the fd table never hears
// of it) by another connection, or by a pipe: nothing reaches either.
class TakenOver : public testing::TestWithParam<bool> {
 protected:
  // The identity as keep-warm takes it: SO_TXTIME, or (a kernel without it) the inode.
  HeartbeatTarget target_for(int fd) {
    HeartbeatTarget target;
    if (GetParam()) {
      EXPECT_TRUE(take_heartbeat_target(fd, target));
      EXPECT_TRUE(target.marked);
    } else {
      struct stat info {};
      EXPECT_EQ(fstat(fd, &info), 0);
      target = HeartbeatTarget{false, info.st_ino, info.st_dev};
    }
    return target;
  }
};

TEST_P(TakenOver, ByAnotherConnection) {
  Loopback link;
  Loopback other;
  ASSERT_TRUE(link.warm_up());
  ASSERT_TRUE(other.warm_up());
  Schedule schedule(link.client, target_for(link.client), 60ms);
  schedule.run_for(400ms);
  ASSERT_GT(link.drain(), 3U);
  ASSERT_EQ(syscall(SYS_dup2, other.client, link.client), link.client);
  schedule.run_for(400ms);
  EXPECT_EQ(other.drain(), 0U) << "no heartbeat on the connection that took the number";
  EXPECT_EQ(schedule.connections(), 0U);
}

TEST_P(TakenOver, ByAPipe) {
  Loopback link;
  ASSERT_TRUE(link.warm_up());
  int pipe_ends[2];
  ASSERT_EQ(pipe2(pipe_ends, O_CLOEXEC | O_NONBLOCK), 0);
  Schedule schedule(link.client, target_for(link.client), 60ms);
  schedule.run_for(400ms);
  ASSERT_GT(link.drain(), 3U);
  ASSERT_EQ(syscall(SYS_dup2, pipe_ends[1], link.client), link.client);
  schedule.run_for(400ms);
  char byte = 0;
  EXPECT_EQ(read(pipe_ends[0], &byte, 1), -1) << "nothing written into the pipe";
  EXPECT_EQ(schedule.connections(), 0U);
  close(pipe_ends[0]);
  close(pipe_ends[1]);
}

INSTANTIATE_TEST_SUITE_P(Identity, TakenOver, testing::Bool(),
                         [](const testing::TestParamInfo<bool>& param) { return param.param ? "Marked" : "Inode"; });

}  // namespace
}  // namespace tcptune::shim
