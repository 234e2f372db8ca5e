// Keep-warm: the gate that keeps heartbeats and app writes apart, and the decision taken at
// each check of a connection.
#include "keep_warm_scheduler.hpp"

#include <netinet/tcp.h>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
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

TEST(KeepWarmGate, RetiredSlotStartsTheNextConnectionOutsideAMessageAndUncorked) {
  KeepWarmGate gate;
  gate.enter_write();
  gate.leave_write(false, true);
  gate.set_corked(true);
  gate.retire();
  EXPECT_FALSE(gate.try_begin_heartbeat());
  gate.start_connection(false);
  EXPECT_TRUE(gate.try_begin_heartbeat());
  gate.end_heartbeat();
}

// The app may cork (or write part of a message) before its rule is applied: starting
// heartbeats must not forget that a message is open.
TEST(KeepWarmGate, CorkSetBeforeTheConnectionStartsHoldsHeartbeats) {
  KeepWarmGate gate;
  gate.stop_heartbeats();
  gate.set_corked(true);
  gate.start_connection(false);
  EXPECT_FALSE(gate.try_begin_heartbeat());
  gate.set_corked(false);
  EXPECT_TRUE(gate.try_begin_heartbeat());
  gate.end_heartbeat();
}

TEST(KeepWarmGate, CorkedMeansInsideAMessage) {
  KeepWarmGate gate;
  gate.set_corked(true);
  gate.enter_write();
  gate.leave_write(true, false);
  EXPECT_FALSE(gate.try_begin_heartbeat());
  gate.set_corked(false);
  EXPECT_TRUE(gate.try_begin_heartbeat());
  gate.end_heartbeat();
}

TEST(KeepWarmGate, StoppedForGoodUntilANewConnection) {
  KeepWarmGate gate;
  gate.stop_heartbeats();
  gate.enter_write();
  gate.leave_write(true, false);
  EXPECT_FALSE(gate.try_begin_heartbeat());
}

// A child forked while one of its threads was inside a write: the gate is reset, and that
// write's leave must not wrap the writer count into the heartbeat bit.
TEST(KeepWarmGate, LeaveAfterAResetDoesNotWrap) {
  KeepWarmGate gate;
  gate.enter_write();
  gate.reset_in_child();
  gate.leave_write(true, false);
  EXPECT_EQ(gate.raw() & (KeepWarmGate::kWritersMask | KeepWarmGate::kHeartbeat), 0U);
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
    gate.stop_heartbeats();
    closed.store(true);
  });
  std::this_thread::sleep_for(50ms);
  EXPECT_FALSE(closed.load());
  gate.end_heartbeat();
  closer.join();
  EXPECT_TRUE(closed.load());
  EXPECT_FALSE(gate.try_begin_heartbeat()) << "stopped: no heartbeat after the close";
}

// Writers on several threads, some writing messages in two parts, and a heartbeat sender:
// a heartbeat never overlaps a write nor falls inside a message, and the writer count returns
// to zero.
TEST(KeepWarmGate, WritersAndHeartbeatsNeverOverlap) {
  KeepWarmGate gate;
  std::atomic<int> writers_inside{0};
  std::atomic<int> messages_open{0};
  std::atomic<bool> overlap{false};
  std::atomic<bool> go{false};
  std::atomic<bool> stop{false};
  std::atomic<std::uint64_t> heartbeats{0};
  std::thread sender([&] {
    go.store(true);
    while (!stop.load()) {
      if (gate.try_begin_heartbeat()) {
        if (writers_inside.load() != 0 || messages_open.load() != 0) {
          overlap.store(true);
        }
        heartbeats.fetch_add(1);
        gate.end_heartbeat();
      }
    }
  });
  std::mutex message_lock;  // the app's own: one message at a time on the connection
  std::vector<std::thread> writers;
  for (int t = 0; t < 3; ++t) {
    writers.emplace_back([&, t] {
      while (!go.load()) {
      }
      for (int i = 0; i < 20000 || heartbeats.load() == 0; ++i) {
        const std::lock_guard<std::mutex> hold(message_lock);
        const bool in_two_parts = (i + t) % 3 == 0;
        gate.enter_write();
        writers_inside.fetch_add(1);
        if (in_two_parts) {
          messages_open.fetch_add(1);  // the first part: accepted in part
        }
        writers_inside.fetch_sub(1);
        gate.leave_write(!in_two_parts, in_two_parts);
        if (in_two_parts) {
          gate.enter_write();
          writers_inside.fetch_add(1);
          messages_open.fetch_sub(1);  // the rest
          writers_inside.fetch_sub(1);
          gate.leave_write(true, false);
        }
      }
    });
  }
  for (auto& writer : writers) {
    writer.join();
  }
  stop.store(true);
  sender.join();
  EXPECT_FALSE(overlap.load());
  EXPECT_GT(heartbeats.load(), 0U);
  EXPECT_EQ(gate.raw() & (KeepWarmGate::kWritersMask | KeepWarmGate::kHeartbeat | KeepWarmGate::kMidMessage), 0U);
}

// A heartbeat that went out: the kernel holds a Nagle socket's next sub-MSS tail until its ACK.
void send_heartbeat(KeepWarmGate& gate) {
  ASSERT_TRUE(gate.try_begin_heartbeat());
  gate.end_heartbeat(/*sent=*/true);
}

bool write_message(KeepWarmGate& gate, bool accepted_all = true, bool accepted_part = false) {
  gate.enter_write();
  return gate.leave_write(accepted_all, accepted_part);
}

TEST(KeepWarmGate, NagleTailIsPushedOnceAfterTheFirstMessageFollowingAHeartbeat) {
  KeepWarmGate gate;
  gate.set_nagle(true);
  EXPECT_FALSE(write_message(gate)) << "no heartbeat yet";
  send_heartbeat(gate);
  send_heartbeat(gate);
  EXPECT_TRUE(write_message(gate)) << "the message after the heartbeats is pushed";
  EXPECT_FALSE(write_message(gate)) << "later messages wait only for the app's own small segments, as without the shim";
  EXPECT_TRUE(gate.try_begin_heartbeat());
  gate.end_heartbeat(/*sent=*/false);
  EXPECT_FALSE(write_message(gate)) << "a heartbeat that did not go out holds nothing back";
}

TEST(KeepWarmGate, NoPushWithoutNagle) {
  KeepWarmGate gate;
  send_heartbeat(gate);
  EXPECT_FALSE(write_message(gate)) << "TCP_NODELAY is on: nothing is held";
  gate.set_nagle(true);
  send_heartbeat(gate);
  gate.set_nagle(false);  // the app turned Nagle off since
  EXPECT_FALSE(write_message(gate));
}

TEST(KeepWarmGate, PushWaitsForTheEndOfTheMessage) {
  KeepWarmGate gate;
  gate.set_nagle(true);
  send_heartbeat(gate);
  EXPECT_FALSE(write_message(gate, false, true)) << "accepted in part or MSG_MORE: the message goes on";
  EXPECT_FALSE(write_message(gate, false, false)) << "EAGAIN: still inside it";
  EXPECT_TRUE(write_message(gate)) << "the write that ends it";
}

TEST(KeepWarmGate, UncorkEndsTheMessageAndIsPushed) {
  KeepWarmGate gate;
  gate.set_nagle(true);
  send_heartbeat(gate);
  EXPECT_FALSE(gate.set_corked(true));
  EXPECT_FALSE(write_message(gate)) << "corked: a push would send the corked bytes early";
  EXPECT_FALSE(write_message(gate));
  EXPECT_TRUE(gate.set_corked(false)) << "the uncork sends the message: its tail is pushed";
  EXPECT_FALSE(gate.set_corked(false)) << "not corked any more";
  EXPECT_TRUE(write_message(gate)) << "an uncork may have had nothing queued: the next write is pushed too";
  EXPECT_FALSE(write_message(gate));
}

TEST(KeepWarmGate, WriteOfNoBytesDoesNotUseUpThePush) {
  KeepWarmGate gate;
  gate.set_nagle(true);
  send_heartbeat(gate);
  gate.enter_write();
  EXPECT_TRUE(gate.leave_write(/*accepted_all=*/true, /*accepted_part=*/false, /*wrote_bytes=*/false))
      << "a zero-length send ending a MSG_MORE chain: what the chain queued is pushed";
  EXPECT_TRUE(write_message(gate)) << "the heartbeat may still be unacknowledged: the next message is pushed";
  EXPECT_FALSE(write_message(gate));
}

TEST(KeepWarmGate, RetireForgetsNagleAndTheHeartbeat) {
  KeepWarmGate gate;
  gate.set_nagle(true);
  send_heartbeat(gate);
  gate.retire();
  gate.start_connection(false);
  EXPECT_FALSE(gate.nagle());
  gate.set_nagle(true);
  EXPECT_FALSE(write_message(gate)) << "the next connection on this number sent no heartbeat";
}

TcpInfoSummary idle_connection() {
  TcpInfoSummary info;
  info.state = TCP_ESTABLISHED;
  info.rto_us = 384'000;
  info.snd_cwnd = 135;
  info.unacked = 0;
  info.last_data_sent_ms = 340;
  return info;
}

config::KeepWarm heartbeat(std::optional<config::Duration> interval = std::nullopt) {
  config::KeepWarm settings;
  settings.payload = "\n";
  settings.interval = interval;
  return settings;
}

TEST(DecideHeartbeat, AutoIntervalIsTheRtoLessTheMargin) {
  EXPECT_EQ(decide_heartbeat(idle_connection(), 0, heartbeat()).interval_ns, 334'000'000);
  TcpInfoSummary floor = idle_connection();
  floor.rto_us = 200'000;
  const std::int64_t at_floor = decide_heartbeat(floor, 0, heartbeat()).interval_ns;
  EXPECT_EQ(at_floor, 150'000'000);
  EXPECT_LE(200'000'000.0 / static_cast<double>(at_floor), 1.5) << "at most 1.5 heartbeats per RTO of silence";
  TcpInfoSummary tiny = idle_connection();
  tiny.rto_us = 4'000;
  EXPECT_EQ(decide_heartbeat(tiny, 0, heartbeat()).interval_ns, 10'000'000) << "never below 10 ms";
  EXPECT_EQ(decide_heartbeat(idle_connection(), 0, heartbeat(150ms)).interval_ns, 150'000'000);
}

TEST(DecideHeartbeat, SendsWhenIdleForTheIntervalWithAWindowWorthKeeping) {
  const HeartbeatDecision decision = decide_heartbeat(idle_connection(), 0, heartbeat());
  EXPECT_EQ(decision.verdict, HeartbeatVerdict::send);
  EXPECT_EQ(decision.recheck_ns, 334'000'000);
}

TEST(DecideHeartbeat, SendsAJiffyEarlyRatherThanLookAgain) {
  TcpInfoSummary info = idle_connection();
  info.last_data_sent_ms = 330;  // 4 ms short of the 334 ms interval: one jiffy at HZ=250
  EXPECT_EQ(decide_heartbeat(info, 0, heartbeat()).verdict, HeartbeatVerdict::send);
  info.last_data_sent_ms = 328;
  EXPECT_EQ(decide_heartbeat(info, 0, heartbeat()).verdict, HeartbeatVerdict::not_yet);
  EXPECT_LE(200.0 / static_cast<double>(150 - kSendEarlyNs / 1'000'000), 1.5)
      << "sent early at the RTO floor, still at most 1.5 heartbeats per RTO";
}

TEST(WindowAfterRestart, HalvedOncePerRtoOfSilenceBeyondTheFirstDownToTheInitialWindow) {
  constexpr std::int64_t rto = 200'000'000;
  EXPECT_EQ(window_after_restart(40, rto, rto), 40U) << "the kernel restarts only past the RTO";
  EXPECT_EQ(window_after_restart(40, rto + 1'000'000, rto), 20U);
  EXPECT_EQ(window_after_restart(40, 2 * rto, rto), 20U);
  EXPECT_EQ(window_after_restart(40, 2 * rto + 1'000'000, rto), 10U);
  EXPECT_EQ(window_after_restart(135, 3 * rto + 1'000'000, rto), 16U);
  EXPECT_EQ(window_after_restart(135, 100 * rto, rto), kInitialWindowSegments);
  EXPECT_EQ(window_after_restart(8, 100 * rto, rto), 8U) << "a window below the initial one stays";
}

TEST(DecideHeartbeat, LateHeartbeatKeepsWhatTheRestartLeaves) {
  TcpInfoSummary info = idle_connection();  // cwnd 135, RTO 384 ms
  info.last_data_sent_ms = 384;
  EXPECT_EQ(decide_heartbeat(info, 0, heartbeat()).verdict, HeartbeatVerdict::send) << "on time";
  info.last_data_sent_ms =
      385;  // the heartbeat halves the window to 67; the app's write after more silence would cut deeper
  EXPECT_EQ(decide_heartbeat(info, 0, heartbeat()).verdict, HeartbeatVerdict::send);
  info.last_data_sent_ms = 3 * 384 + 1;  // halved three times: 135 -> 16
  EXPECT_EQ(decide_heartbeat(info, 0, heartbeat()).verdict, HeartbeatVerdict::send);
  info.last_data_sent_ms = 4 * 384 + 1;  // four times: 135 -> 8, so the initial 10: nothing left to keep
  EXPECT_EQ(decide_heartbeat(info, 0, heartbeat()).verdict, HeartbeatVerdict::cold);
}

TEST(DecideHeartbeat, WaitsForTheRestOfTheInterval) {
  TcpInfoSummary info = idle_connection();
  info.last_data_sent_ms = 100;
  const HeartbeatDecision decision = decide_heartbeat(info, 0, heartbeat());
  EXPECT_EQ(decision.verdict, HeartbeatVerdict::not_yet);
  EXPECT_EQ(decision.recheck_ns, 234'000'000);
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
  EXPECT_EQ(decide_heartbeat(info, 0, heartbeat()).verdict, HeartbeatVerdict::cold)
      << "nothing to keep until the app writes again";
  info.unacked = 3;
  EXPECT_EQ(decide_heartbeat(info, 0, heartbeat()).verdict, HeartbeatVerdict::not_yet)
      << "data in flight may still grow the window";
  info.unacked = 0;
  info.snd_cwnd = kInitialWindowSegments + 1;
  EXPECT_EQ(decide_heartbeat(info, 0, heartbeat()).verdict, HeartbeatVerdict::send);
}

TEST(DecideHeartbeat, WaitsForTheHandshakeAndStopsOnceClosing) {
  TcpInfoSummary info = idle_connection();
  // The rule is applied before connect(): the worker may look before the SYN leaves.
  info.rto_us = 1'000'000;  // the kernel's default before the handshake measured anything
  for (const std::uint8_t opening : {TCP_CLOSE, TCP_SYN_SENT, TCP_SYN_RECV}) {
    info.state = opening;
    const HeartbeatDecision decision = decide_heartbeat(info, 0, heartbeat());
    EXPECT_EQ(decision.verdict, HeartbeatVerdict::not_yet) << int{opening};
    EXPECT_LE(decision.recheck_ns, 150'000'000) << "a look soon after the handshake, not a 1 s RTO later";
  }
  for (const std::uint8_t closing : {TCP_CLOSE_WAIT, TCP_FIN_WAIT1, TCP_FIN_WAIT2, TCP_LAST_ACK, TCP_CLOSING}) {
    info.state = closing;
    EXPECT_EQ(decide_heartbeat(info, 0, heartbeat()).verdict, HeartbeatVerdict::stop) << int{closing};
  }
}

}  // namespace
}  // namespace tcptune::shim
