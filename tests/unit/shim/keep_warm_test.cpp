// Keep-warm: the gate that keeps heartbeats and app writes apart, and the decision taken at
// each check of a connection.
#include "keep_warm.hpp"

#include <netinet/tcp.h>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "keep_warm_gate.hpp"

namespace tcptune::shim {
namespace {

using namespace std::chrono_literals;

TEST(KeepWarmGate, HeartbeatOnlyBetweenWholeWrites) {
  KeepWarmGate gate;
  EXPECT_TRUE(gate.try_begin_heartbeat());
  gate.end_heartbeat();

  gate.enter_write();
  EXPECT_FALSE(gate.try_begin_heartbeat()) << "a write is in progress";
  gate.leave_write(/*accepted_all=*/false, /*accepted_part=*/true);
  EXPECT_FALSE(gate.try_begin_heartbeat()) << "the app is inside a message it wrote in part";

  gate.enter_write();
  gate.leave_write(false, false);  // EAGAIN: still inside the message
  EXPECT_FALSE(gate.try_begin_heartbeat());

  gate.enter_write();
  gate.leave_write(true, false);  // the rest of the message
  EXPECT_TRUE(gate.try_begin_heartbeat());
  gate.end_heartbeat();
  EXPECT_EQ(gate.raw() & KeepWarmGate::kWritersMask, 0U);
}

TEST(KeepWarmGate, EveryWriteMovesTheEpoch) {
  KeepWarmGate gate;
  const std::uint32_t before = gate.write_epoch();
  for (int i = 0; i < 3; ++i) {
    gate.enter_write();
    gate.leave_write(true, false);
  }
  EXPECT_EQ(gate.write_epoch(), before + 3);
  EXPECT_EQ(gate.raw() & KeepWarmGate::kWritersMask, 0U);
}

TEST(KeepWarmGate, NewConnectionStartsOutsideAMessage) {
  KeepWarmGate gate;
  gate.enter_write();
  gate.leave_write(false, true);
  gate.start_connection();
  EXPECT_TRUE(gate.try_begin_heartbeat());
  gate.end_heartbeat();
}

TEST(KeepWarmGate, WriterWaitsForTheHeartbeatInProgress) {
  KeepWarmGate gate;
  ASSERT_TRUE(gate.try_begin_heartbeat());
  std::atomic<bool> wrote{false};
  std::thread writer([&] {
    gate.enter_write();
    wrote.store(true);
    gate.leave_write(true, false);
  });
  std::this_thread::sleep_for(50ms);
  EXPECT_FALSE(wrote.load()) << "the write started while the heartbeat held the gate";
  gate.end_heartbeat();
  writer.join();
  EXPECT_TRUE(wrote.load());
}

TEST(KeepWarmGate, CloseWaitsForTheHeartbeatInProgress) {
  KeepWarmGate gate;
  ASSERT_TRUE(gate.try_begin_heartbeat());
  std::atomic<bool> closed{false};
  std::thread closer([&] {
    gate.wait_for_heartbeat();
    closed.store(true);
  });
  std::this_thread::sleep_for(50ms);
  EXPECT_FALSE(closed.load());
  gate.end_heartbeat();
  closer.join();
  EXPECT_TRUE(closed.load());
}

// Writers on several threads and a heartbeat sender: never both inside at once, and the
// writer count returns to zero.
TEST(KeepWarmGate, WritersAndHeartbeatsNeverOverlap) {
  KeepWarmGate gate;
  std::atomic<int> writers_inside{0};
  std::atomic<bool> overlap{false};
  std::atomic<bool> stop{false};
  std::vector<std::thread> writers;
  for (int t = 0; t < 3; ++t) {
    writers.emplace_back([&] {
      for (int i = 0; i < 20000; ++i) {
        gate.enter_write();
        writers_inside.fetch_add(1);
        writers_inside.fetch_sub(1);
        gate.leave_write(true, false);
      }
    });
  }
  std::uint64_t heartbeats = 0;
  std::thread sender([&] {
    while (!stop.load()) {
      if (gate.try_begin_heartbeat()) {
        if (writers_inside.load() != 0) {
          overlap.store(true);
        }
        ++heartbeats;
        gate.end_heartbeat();
      }
    }
  });
  for (auto& writer : writers) {
    writer.join();
  }
  stop.store(true);
  sender.join();
  EXPECT_FALSE(overlap.load());
  EXPECT_GT(heartbeats, 0U);
  EXPECT_EQ(gate.raw() & (KeepWarmGate::kWritersMask | KeepWarmGate::kHeartbeat), 0U);
  EXPECT_EQ(gate.write_epoch(), 60000U % (1U << (32 - KeepWarmGate::kEpochShift)));
}

TcpInfoSummary idle_connection() {
  TcpInfoSummary info;
  info.state = TCP_ESTABLISHED;
  info.rto_us = 384'000;
  info.snd_cwnd = 135;
  info.unacked = 0;
  info.last_data_sent_ms = 250;
  return info;
}

config::KeepWarm heartbeat(std::optional<config::Duration> interval = std::nullopt) {
  config::KeepWarm settings;
  settings.payload = "\n";
  settings.interval = interval;
  return settings;
}

TEST(DecideHeartbeat, AutoIntervalIsHalfTheRto) {
  EXPECT_EQ(heartbeat_interval_ns(idle_connection(), heartbeat()), 192'000'000);
  TcpInfoSummary tiny = idle_connection();
  tiny.rto_us = 4'000;
  EXPECT_EQ(heartbeat_interval_ns(tiny, heartbeat()), 10'000'000) << "never below 10 ms";
  EXPECT_EQ(heartbeat_interval_ns(idle_connection(), heartbeat(150ms)), 150'000'000);
}

TEST(DecideHeartbeat, SendsWhenIdleForTheIntervalWithAWindowWorthKeeping) {
  const HeartbeatDecision decision = decide_heartbeat(idle_connection(), 0, heartbeat());
  EXPECT_EQ(decision.verdict, HeartbeatVerdict::send);
  EXPECT_EQ(decision.recheck_ns, 192'000'000);
}

TEST(DecideHeartbeat, WaitsForTheRestOfTheInterval) {
  TcpInfoSummary info = idle_connection();
  info.last_data_sent_ms = 100;
  const HeartbeatDecision decision = decide_heartbeat(info, 0, heartbeat());
  EXPECT_EQ(decision.verdict, HeartbeatVerdict::not_yet);
  EXPECT_EQ(decision.recheck_ns, 92'000'000);
}

TEST(DecideHeartbeat, NothingWhileDataIsInFlightOrUnsent) {
  TcpInfoSummary info = idle_connection();
  EXPECT_EQ(decide_heartbeat(info, 1, heartbeat()).verdict, HeartbeatVerdict::not_yet) << "queued";
  info.unacked = 2;
  EXPECT_EQ(decide_heartbeat(info, 0, heartbeat()).verdict, HeartbeatVerdict::not_yet) << "in flight";
  EXPECT_GE(decide_heartbeat(info, 0, heartbeat()).recheck_ns, kShortestRecheckNs);
}

TEST(DecideHeartbeat, NothingWhenTheWindowIsNoLargerThanTheInitialOne) {
  TcpInfoSummary info = idle_connection();
  info.snd_cwnd = kInitialWindowSegments;
  EXPECT_EQ(decide_heartbeat(info, 0, heartbeat()).verdict, HeartbeatVerdict::not_yet);
  info.snd_cwnd = kInitialWindowSegments + 1;
  EXPECT_EQ(decide_heartbeat(info, 0, heartbeat()).verdict, HeartbeatVerdict::send);
}

TEST(DecideHeartbeat, WaitsForTheHandshakeAndStopsOnceClosing) {
  TcpInfoSummary info = idle_connection();
  info.state = TCP_SYN_SENT;
  EXPECT_EQ(decide_heartbeat(info, 0, heartbeat()).verdict, HeartbeatVerdict::not_yet);
  for (const std::uint8_t closing : {TCP_CLOSE_WAIT, TCP_FIN_WAIT1, TCP_FIN_WAIT2, TCP_CLOSE, TCP_LAST_ACK}) {
    info.state = closing;
    EXPECT_EQ(decide_heartbeat(info, 0, heartbeat()).verdict, HeartbeatVerdict::stop) << int{closing};
  }
}

}  // namespace
}  // namespace tcptune::shim
