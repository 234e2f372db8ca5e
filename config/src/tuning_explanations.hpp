// What each tuning key does, in `tcptune check`'s words (the `explain` column of
// tuning_keys.cpp's table): lines of "  key: ...\n", or "" when the key says nothing.
#pragma once

#include <string>

#include "tcptune/config/tuning_keys.hpp"

namespace tcptune::config {

std::string explain_nodelay(const Tuning& tuning, const HostOutlook& host);
std::string explain_buffers(const Tuning& tuning, const HostOutlook& host);
std::string explain_override_app_buffers(const Tuning& tuning, const HostOutlook& host);
std::string explain_congestion(const Tuning& tuning, const HostOutlook& host);
std::string explain_keepalive(const Tuning& tuning, const HostOutlook& host);
std::string explain_user_timeout(const Tuning& tuning, const HostOutlook& host);
std::string explain_notsent_lowat(const Tuning& tuning, const HostOutlook& host);
std::string explain_thin_linear_timeouts(const Tuning& tuning, const HostOutlook& host);
std::string explain_quickack(const Tuning& tuning, const HostOutlook& host);
std::string explain_tos(const Tuning& tuning, const HostOutlook& host);
std::string explain_keep_warm(const Tuning& tuning, const HostOutlook& host);
std::string explain_sockopts(const Tuning& tuning, const HostOutlook& host);
std::string explain_nothing(const Tuning& tuning, const HostOutlook& host);  // callsite: logged, not explained

}  // namespace tcptune::config
