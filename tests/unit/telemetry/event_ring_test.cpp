// The ring between app threads and the worker: order per producer, nothing lost or invented
// while there is room, drops counted (never blocking) when it is full.
#include "event_ring.hpp"

#include <gtest/gtest.h>

#include <array>
#include <cstddef>
#include <thread>
#include <vector>

namespace tcptune::telemetry {
namespace {

struct TestEvent {
  std::uint32_t producer;
  std::uint32_t sequence;
};

TEST(EventRing, FifoForOneProducer) {
  static EventRing<TestEvent, 8> ring;
  for (std::uint32_t round = 0; round < 5; ++round) {  // wraps around the cells several times
    for (std::uint32_t i = 0; i < 8; ++i) {
      ASSERT_TRUE(ring.try_push({0, round * 8 + i}));
    }
    TestEvent event{};
    for (std::uint32_t i = 0; i < 8; ++i) {
      ASSERT_TRUE(ring.try_pop(event));
      EXPECT_EQ(event.sequence, round * 8 + i);
    }
    EXPECT_FALSE(ring.try_pop(event));
  }
  EXPECT_EQ(ring.take_dropped(), 0U);
}

TEST(EventRing, FullRingDropsAndCountsInsteadOfBlocking) {
  static EventRing<TestEvent, 16> ring;
  int accepted = 0;
  for (std::uint32_t i = 0; i < 1000; ++i) {
    accepted += ring.try_push({0, i}) ? 1 : 0;
  }
  EXPECT_EQ(accepted, 16);
  EXPECT_EQ(ring.take_dropped(), 984U);
  EXPECT_EQ(ring.take_dropped(), 0U);
  TestEvent event{};
  ASSERT_TRUE(ring.try_pop(event));
  EXPECT_EQ(event.sequence, 0U);  // the oldest events are the ones kept
  EXPECT_TRUE(ring.try_push({0, 1000}));
}

TEST(EventRing, AClaimedCellIsReadOnlyOncePublishedAndTheEventsAfterItWait) {
  static EventRing<TestEvent, 8> ring;
  auto claim = ring.try_claim();
  ASSERT_TRUE(claim.has_value());
  ASSERT_TRUE(ring.try_push({1, 2}));  // after the claim: waits for it
  TestEvent event{};
  EXPECT_FALSE(ring.try_pop(event));
  *claim->event = TestEvent{1, 1};  // filled in place
  ring.publish(*claim);
  ASSERT_TRUE(ring.try_pop(event));
  EXPECT_EQ(event.sequence, 1U);
  ASSERT_TRUE(ring.try_pop(event));
  EXPECT_EQ(event.sequence, 2U);
  EXPECT_FALSE(ring.try_pop(event));
}

TEST(EventRing, AClaimOnAFullRingIsRefusedAndCountedOnlyWhenAsked) {
  static EventRing<TestEvent, 4> ring;
  for (std::uint32_t i = 0; i < 4; ++i) {
    ASSERT_TRUE(ring.try_push({0, i}));
  }
  EXPECT_FALSE(ring.try_claim(/*counted=*/false).has_value());
  EXPECT_EQ(ring.take_dropped(), 0U);
  EXPECT_FALSE(ring.try_claim().has_value());
  EXPECT_EQ(ring.take_dropped(), 1U);
}

TEST(EventRing, BacklogCountsWhatTheConsumerHasNotRead) {
  static EventRing<TestEvent, 8> ring;
  EXPECT_FALSE(ring.backlog_at_least(1));
  for (std::uint32_t i = 0; i < 5; ++i) {
    ASSERT_TRUE(ring.try_push({0, i}));
  }
  EXPECT_TRUE(ring.backlog_at_least(5));
  EXPECT_FALSE(ring.backlog_at_least(6));
  TestEvent event{};
  ASSERT_TRUE(ring.try_pop(event));
  ASSERT_TRUE(ring.try_pop(event));
  EXPECT_FALSE(ring.backlog_at_least(4)) << "two of the five were read";
  EXPECT_TRUE(ring.backlog_at_least(3));
  for (std::uint32_t i = 5; i < 10; ++i) {  // the two cells read are written again
    ASSERT_TRUE(ring.try_push({0, i}));
  }
  EXPECT_FALSE(ring.try_push({0, 10})) << "full";
  EXPECT_TRUE(ring.backlog_at_least(8));
  for (std::uint32_t i = 2; i < 10; ++i) {
    ASSERT_TRUE(ring.try_pop(event));
    EXPECT_EQ(event.sequence, i);
  }
  EXPECT_FALSE(ring.try_pop(event));
  EXPECT_EQ(ring.take_dropped(), 1U);
}

// An event that says how many of its bytes are used: a short one after a long one in the same
// cell arrives whole.
struct PrefixEvent {
  std::uint32_t kind;
  std::uint32_t value;
  std::array<std::uint64_t, 8> payload;
  [[nodiscard]] std::size_t used_bytes() const noexcept {
    return kind == 0 ? offsetof(PrefixEvent, payload) : sizeof(PrefixEvent);
  }
};

TEST(EventRing, CopiesTheBytesAnEventSaysItUses) {
  static EventRing<PrefixEvent, 2> ring;
  PrefixEvent event{};
  for (std::uint32_t round = 0; round < 3; ++round) {
    PrefixEvent whole{1, round, {}};
    whole.payload.fill(std::uint64_t{0x1111} * (round + 1));
    ASSERT_TRUE(ring.try_push(whole));
    ASSERT_TRUE(ring.try_push({0, 100 + round, {}}));
    ASSERT_TRUE(ring.try_pop(event));
    EXPECT_EQ(event.kind, 1U);
    EXPECT_EQ(event.value, round);
    EXPECT_EQ(event.payload, whole.payload);
    ASSERT_TRUE(ring.try_pop(event));
    EXPECT_EQ(event.kind, 0U);
    EXPECT_EQ(event.value, 100 + round);
  }
}

TEST(EventRing, ManyProducersOneConsumerKeepEachProducersOrder) {
  static EventRing<TestEvent, 1024> ring;
  constexpr std::uint32_t kProducers = 4;
  constexpr std::uint32_t kEach = 200000;
  std::atomic<std::uint64_t> pushed{0};
  std::atomic<std::uint32_t> finished{0};
  std::vector<std::thread> producers;
  for (std::uint32_t p = 0; p < kProducers; ++p) {
    producers.emplace_back([&, p] {
      for (std::uint32_t i = 0; i < kEach; ++i) {
        if (ring.try_push({p, i})) {
          pushed.fetch_add(1, std::memory_order_relaxed);
        }
      }
      finished.fetch_add(1, std::memory_order_release);
    });
  }
  std::vector<std::int64_t> last(kProducers, -1);
  std::uint64_t popped = 0;
  bool ordered = true;
  auto drain = [&] {
    TestEvent event{};
    while (ring.try_pop(event)) {
      ordered = ordered && static_cast<std::int64_t>(event.sequence) > last[event.producer];
      last[event.producer] = event.sequence;
      ++popped;
    }
  };
  while (finished.load(std::memory_order_acquire) < kProducers) {
    drain();
  }
  for (auto& producer : producers) {
    producer.join();
  }
  drain();
  EXPECT_TRUE(ordered);
  EXPECT_EQ(popped, pushed.load());
  EXPECT_EQ(popped + ring.take_dropped(), std::uint64_t{kProducers} * kEach);
}

}  // namespace
}  // namespace tcptune::telemetry
