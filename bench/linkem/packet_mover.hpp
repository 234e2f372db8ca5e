// The daemon's event loop: reads packets from each namespace's TUN device, asks that direction's
// LinkModel when (or whether) to deliver them, and writes them into the other TUN device on time.
// Single-threaded; it sleeps in epoll until the next packet is due or input arrives, never busy-polls.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "counters.hpp"
#include "link_config.hpp"
#include "link_model.hpp"
#include "packet_pool.hpp"

namespace tcptune::linkem {

class PacketMover {
 public:
  struct Fds {
    int tun_a = -1;  // namespace tcptune-a's device: packets read here go a -> b
    int tun_b = -1;
    int control = -1;  // listening unix socket: each connection gets status_json() and is closed
    int signals = -1;  // signalfd: any signal read from it stops the loop
  };
  using StatusJson = std::function<std::string(const DirectionCounters& a_to_b, const DirectionCounters& b_to_a)>;

  PacketMover(const LinkConfig& config, const Fds& fds, StatusJson status_json);
  PacketMover(const PacketMover&) = delete;
  PacketMover& operator=(const PacketMover&) = delete;
  ~PacketMover();

  bool init(std::string& error);
  // Moves packets until a signal arrives; returns its number.
  int run();

  const DirectionCounters& a_to_b() const { return lanes_[0].counters; }
  const DirectionCounters& b_to_a() const { return lanes_[1].counters; }

  // Enough slots for a 10 Gbit/s x 1 s delay line of full packets would be absurd; this holds about
  // 200 ms of 2 Gbit/s in 1500-byte packets, far above what this host can move. Touched only as used.
  static constexpr std::uint32_t kPoolSlots = 1U << 16;

 private:
  struct Lane {
    Lane(const LinkParams& params, std::uint64_t seed, int in, int out)
        : model(params, seed), fifo(kPoolSlots), in_fd(in), out_fd(out) {}
    DirectionModel model;
    SlotFifo fifo;
    int in_fd;
    int out_fd;
    DirectionCounters counters;
  };

  void read_batch(Lane& lane);
  void deliver_due();
  Lane* earliest_lane();
  void serve_control();
  // How long to sleep before 'deadline_ns': 0 means spin (it is due within the spin budget).
  std::int64_t sleep_budget(std::int64_t deadline_ns, std::int64_t now_ns);
  bool may_spin(std::int64_t now_ns, std::int64_t spin_ns);
  void spin_until(std::int64_t deadline_ns);
  void learn_wake_latency(std::int64_t overshoot_ns);

  Fds fds_;
  StatusJson status_json_;
  PacketPool pool_;
  Lane lanes_[2];
  int epoll_fd_ = -1;
  int stop_signal_ = 0;
  // How much earlier than a deadline to ask for a wake-up, learned from how late wake-ups come.
  std::int64_t wake_early_ns_ = 100000;
  std::int64_t spin_tokens_ns_ = 0;
  std::int64_t spin_refilled_ns_ = 0;
};

// CLOCK_MONOTONIC in nanoseconds: every time in the mover and the model is on this clock.
std::int64_t monotonic_ns();

}  // namespace tcptune::linkem
