// The ring under pressure: many producers on a ring of a few cells, so that nearly every push
// finds it full and asks the consumer's counter again, events of several lengths sharing cells,
// producers preempted anywhere (more threads than CPUs), and pushes from a signal handler that
// interrupt a push on the same thread. Every event popped is whole (its payload matches what its
// producer wrote), each producer's events come in its order, and every event pushed is popped:
// none lost, none invented, and the refusals are exactly the counted drops.
#include <gtest/gtest.h>
#include <pthread.h>
#include <signal.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <thread>
#include <vector>

#include "event_ring.hpp"

namespace tcptune::telemetry {
namespace {

std::uint64_t mix(std::uint64_t x) noexcept {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  return x ^ (x >> 33);
}

// kind 0: header only; kind 1: header and 8 payload words; kind 2: all 40 words.
struct StressEvent {
  std::uint32_t kind;
  std::uint32_t producer;
  std::uint64_t sequence;
  std::array<std::uint64_t, 40> payload;
  [[nodiscard]] std::size_t used_bytes() const noexcept {
    switch (kind) {
      case 0: return offsetof(StressEvent, payload);
      case 1: return offsetof(StressEvent, payload) + 8 * sizeof(std::uint64_t);
      default: return sizeof(StressEvent);
    }
  }
  [[nodiscard]] std::size_t words() const noexcept {
    return (used_bytes() - offsetof(StressEvent, payload)) / sizeof(std::uint64_t);
  }
};

StressEvent make_event(std::uint32_t producer, std::uint64_t sequence) noexcept {
  StressEvent event;
  event.kind = static_cast<std::uint32_t>(mix(sequence * 131 + producer) % 3);
  event.producer = producer;
  event.sequence = sequence;
  for (std::size_t i = 0; i < event.payload.size(); ++i) {
    event.payload[i] = i < event.words() ? mix((std::uint64_t{producer} << 40) ^ (sequence << 8) ^ i) : 0;
  }
  return event;
}

bool whole(const StressEvent& event) noexcept {
  if (event.kind > 2) {
    return false;
  }
  for (std::size_t i = 0; i < event.words(); ++i) {
    if (event.payload[i] != mix((std::uint64_t{event.producer} << 40) ^ (event.sequence << 8) ^ i)) {
      return false;
    }
  }
  return true;
}

constexpr std::uint32_t kMaxProducers = 16;

// What the consumer saw, checked against what the producers did.
struct Tally {
  std::array<std::int64_t, kMaxProducers> last{};
  std::array<std::uint64_t, kMaxProducers> popped{};
  std::uint64_t torn = 0;
  std::uint64_t out_of_order = 0;
  Tally() { last.fill(-1); }
  void take(const StressEvent& event) {
    if (!whole(event) || event.producer >= kMaxProducers) {
      ++torn;
      return;
    }
    if (static_cast<std::int64_t>(event.sequence) <= last[event.producer]) {
      ++out_of_order;
    }
    last[event.producer] = static_cast<std::int64_t>(event.sequence);
    ++popped[event.producer];
  }
};

template <std::size_t Capacity>
void run_stress(std::uint32_t producers, std::uint64_t each) {
  static EventRing<StressEvent, Capacity> ring;
  ring.reset_in_child();  // one ring per capacity: start clean for each run
  std::array<std::atomic<std::uint64_t>, kMaxProducers> accepted{};
  std::atomic<std::uint64_t> refused{0};
  std::atomic<std::uint64_t> backlog_over_capacity{0};
  std::atomic<std::uint32_t> finished{0};
  std::vector<std::thread> threads;
  for (std::uint32_t p = 0; p < producers; ++p) {
    threads.emplace_back([&, p] {
      for (std::uint64_t i = 0; i < each; ++i) {
        const StressEvent event = make_event(p, i);
        const bool counted = (i % 5) != 0;
        if (ring.try_push(event, counted)) {
          accepted[p].fetch_add(1, std::memory_order_relaxed);
        } else {
          refused.fetch_add(1, std::memory_order_relaxed);
          if (!counted) {
            ring.count_dropped();
          }
        }
        if (ring.backlog_at_least(Capacity + 1)) {
          backlog_over_capacity.fetch_add(1, std::memory_order_relaxed);
        }
      }
      finished.fetch_add(1, std::memory_order_release);
    });
  }
  Tally tally;
  std::uint64_t dropped = 0;
  StressEvent event{};
  const auto drain = [&] {
    while (ring.try_pop(event)) {
      tally.take(event);
    }
    dropped += ring.take_dropped();
  };
  while (finished.load(std::memory_order_acquire) < producers) {
    drain();
  }
  for (auto& thread : threads) {
    thread.join();
  }
  drain();
  EXPECT_EQ(tally.torn, 0U);
  EXPECT_EQ(tally.out_of_order, 0U);
  EXPECT_EQ(backlog_over_capacity.load(), 0U);
  std::uint64_t popped = 0;
  for (std::uint32_t p = 0; p < producers; ++p) {
    EXPECT_EQ(tally.popped[p], accepted[p].load()) << "producer " << p;
    popped += tally.popped[p];
  }
  EXPECT_EQ(dropped, refused.load());
  EXPECT_EQ(popped + dropped, std::uint64_t{producers} * each);
  EXPECT_GT(popped, 0U);
}

#if defined(__SANITIZE_THREAD__)
constexpr std::uint64_t kEach = 20000;
#else
constexpr std::uint64_t kEach = 200000;
#endif

TEST(EventRingStress, FourProducersOnFourCells) {
  run_stress<4>(4, kEach);
}
TEST(EventRingStress, EightProducersOnEightCells) {
  run_stress<8>(8, kEach / 2);
}
TEST(EventRingStress, TwelveProducersOnTwoCells) {
  run_stress<2>(12, kEach / 4);
}

// A signal handler pushing on a thread that is itself pushing: the handler's push may land
// between the interrupted push's claim of a cell and its publication.
EventRing<StressEvent, 8> g_signal_ring;
// Each producer thread's handler is a producer of its own (SIGUSR1 is blocked while its handler
// runs, so one thread's handler pushes never overlap).
constexpr std::uint32_t kHandlerProducers = 8;
thread_local std::uint32_t t_handler_producer = 0;
std::array<std::uint64_t, kMaxProducers> g_handler_sequence{};
std::atomic<std::uint64_t> g_handler_accepted{0};
std::atomic<std::uint64_t> g_handler_refused{0};

void push_from_handler(int /*signal*/) {
  const std::uint32_t producer = t_handler_producer;
  const std::uint64_t sequence = g_handler_sequence[producer]++;
  if (g_signal_ring.try_push(make_event(producer, sequence))) {
    g_handler_accepted.fetch_add(1, std::memory_order_relaxed);
  } else {
    g_handler_refused.fetch_add(1, std::memory_order_relaxed);
  }
}

TEST(EventRingStress, SignalHandlerPushesInterruptPushes) {
  g_signal_ring.reset_in_child();  // (run again by --gtest_repeat)
  g_handler_sequence.fill(0);
  g_handler_accepted.store(0);
  g_handler_refused.store(0);
  struct sigaction action {};
  action.sa_handler = push_from_handler;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  struct sigaction previous {};
  ASSERT_EQ(sigaction(SIGUSR1, &action, &previous), 0);
  // SIGUSR1 only for the producers: the consumer and this thread block it.
  sigset_t usr1;
  sigemptyset(&usr1);
  sigaddset(&usr1, SIGUSR1);
  constexpr std::uint32_t kProducers = 3;
  std::array<std::atomic<std::uint64_t>, kProducers> accepted{};
  std::atomic<std::uint64_t> refused{0};
  std::atomic<std::uint32_t> finished{0};
  std::atomic<bool> ready{false};
  std::vector<std::thread> threads;
  std::array<pthread_t, kProducers> handles{};
  std::atomic<std::uint32_t> started{0};
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  for (std::uint32_t p = 0; p < kProducers; ++p) {
    threads.emplace_back([&, p] {
      handles[p] = pthread_self();
      t_handler_producer = kHandlerProducers + p;
      started.fetch_add(1, std::memory_order_release);
      // At least kEach events, and on until the handlers have pushed a few hundred between them.
      for (std::uint64_t i = 0; i < kEach || (g_handler_accepted.load(std::memory_order_relaxed) < 500 &&
                                              std::chrono::steady_clock::now() < deadline);
           ++i) {
        if (g_signal_ring.try_push(make_event(p, i))) {
          accepted[p].fetch_add(1, std::memory_order_relaxed);
        } else {
          refused.fetch_add(1, std::memory_order_relaxed);
        }
      }
      finished.fetch_add(1, std::memory_order_release);
      while (!ready.load(std::memory_order_acquire)) {  // stays alive until no more signals
        std::this_thread::yield();
      }
    });
  }
  pthread_sigmask(SIG_BLOCK, &usr1, nullptr);
  std::thread signaller([&] {
    while (started.load(std::memory_order_acquire) < kProducers) {
      std::this_thread::yield();
    }
    std::uint64_t sent = 0;
    while (finished.load(std::memory_order_acquire) < kProducers) {
      for (std::uint32_t p = 0; p < kProducers; ++p) {
        pthread_kill(handles[p], SIGUSR1);
        ++sent;
      }
      if (sent % 64 == 0) {
        std::this_thread::yield();
      }
    }
  });
  Tally tally;
  std::uint64_t dropped = 0;
  StressEvent event{};
  const auto drain = [&] {
    while (g_signal_ring.try_pop(event)) {
      tally.take(event);
    }
    dropped += g_signal_ring.take_dropped();
  };
  while (finished.load(std::memory_order_acquire) < kProducers) {
    drain();
  }
  signaller.join();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // signals in flight handled
  ready.store(true, std::memory_order_release);
  for (auto& thread : threads) {
    thread.join();
  }
  drain();
  pthread_sigmask(SIG_UNBLOCK, &usr1, nullptr);
  sigaction(SIGUSR1, &previous, nullptr);
  EXPECT_EQ(tally.torn, 0U);
  EXPECT_EQ(tally.out_of_order, 0U);
  for (std::uint32_t p = 0; p < kProducers; ++p) {
    EXPECT_EQ(tally.popped[p], accepted[p].load()) << "producer " << p;
  }
  std::uint64_t handler_popped = 0;
  for (std::uint32_t p = 0; p < kProducers; ++p) {
    handler_popped += tally.popped[kHandlerProducers + p];
  }
  EXPECT_EQ(handler_popped, g_handler_accepted.load());
  EXPECT_EQ(dropped, refused.load() + g_handler_refused.load());
  EXPECT_GT(g_handler_accepted.load(), 0U) << "no handler push got in";
}

}  // namespace
}  // namespace tcptune::telemetry
