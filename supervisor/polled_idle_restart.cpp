#include "polled_idle_restart.hpp"

#include <netinet/tcp.h>

namespace tcptune::supervisor {

std::optional<PolledIdleRestart> idle_restart_between(const shim::TcpInfoSummary& before,
                                                      const shim::TcpInfoSummary& after, std::uint32_t gap_ms) {
  const bool idle_past_rto = before.state == TCP_ESTABLISHED && before.unacked == 0 && before.rto_us != 0 &&
                             static_cast<std::uint64_t>(before.last_data_sent_ms) * 1000 >= before.rto_us;
  const bool sent_since = after.last_data_sent_ms < gap_ms;
  if (!idle_past_rto || !sent_since || after.snd_cwnd >= before.snd_cwnd) {
    return std::nullopt;
  }
  return PolledIdleRestart{before.last_data_sent_ms, before.rto_us, after.rtt_us, before.snd_cwnd, after.snd_cwnd};
}

}  // namespace tcptune::supervisor
