// An idle restart seen from outside: the supervisor does not see the program's writes, so it
// compares two sock_diag dumps of a connection. At the first the connection had sent nothing
// for at least its RTO with nothing in flight, so its next send restarts the window (Linux's
// tcp_cwnd_restart, with tcp_slow_start_after_idle=1 and a congestion control other than BBR);
// at the second it has sent since, with a smaller window. What the restart costs depends on
// the write's size, which is not known here; the window after is the one at the second dump,
// which may already have grown back some.
#pragma once

#include <cstdint>
#include <optional>

#include "tcp_info_reader.hpp"

namespace tcptune::supervisor {

struct PolledIdleRestart {
  std::uint32_t idle_ms_at_least = 0;  // the silence the first dump saw
  std::uint32_t rto_us = 0;
  std::uint32_t rtt_us = 0;
  std::uint32_t cwnd_before = 0;
  std::uint32_t cwnd_after = 0;
};

// `gap_ms`: the time between the two dumps. Pure.
std::optional<PolledIdleRestart> idle_restart_between(const shim::TcpInfoSummary& before,
                                                      const shim::TcpInfoSummary& after, std::uint32_t gap_ms);

}  // namespace tcptune::supervisor
