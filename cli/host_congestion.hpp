// What this network namespace says about congestion control algorithms.
#pragma once

#include <string>

namespace tcptune::cli {

// "reno bbr" style lists from /proc/sys/net/ipv4.
bool listed(const std::string& list, const std::string& algorithm);
// One sentence: will setsockopt(TCP_CONGESTION, algorithm) work for this process?
std::string congestion_outlook(const std::string& algorithm, bool cap_net_admin);

}  // namespace tcptune::cli
