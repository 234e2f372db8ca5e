// Every table of a policy and the keys it takes, in one place: the loader's unknown-key checks
// use them, and an unknown key is told where it belongs when another table takes it
// (`nodelay` at the top: "put it under [defaults] ... or in a [[rule]]").
#pragma once

#include <span>
#include <string>
#include <string_view>

namespace tcptune::config {

inline constexpr std::string_view kTopKeys[] = {"version", "defaults", "log", "rule"};
inline constexpr std::string_view kRuleOwnKeys[] = {"name", "match"};  // and every tuning key
inline constexpr std::string_view kLogKeys[] = {"path",     "level",      "format",       "prometheus_textfile",
                                                "interval", "slow_write", "trace_writes", "rotate_size",
                                                "keep",     "callsite",   "summary"};
inline constexpr std::string_view kMatchKeys[] = {"peer", "port", "role", "program"};
inline constexpr std::string_view kBufferKeys[] = {"bandwidth", "rtt", "sndbuf", "rcvbuf"};
inline constexpr std::string_view kKeepaliveKeys[] = {"idle", "interval", "count"};
inline constexpr std::string_view kKeepWarmKeys[] = {"protocol", "heartbeat", "heartbeat_hex", "interval", "max_idle"};
inline constexpr std::string_view kSockoptKeys[] = {"level", "name", "value"};

// "unknown key 'nodelay' in the policy; put it under [defaults] (every socket) or in a [[rule]]",
// or "...; did you mean 'nodelay'?" for a misspelling of a key of `where` (or, failing that, of
// another table, with where that key goes). `where` is the table's name in messages ("the
// policy", "[defaults]", "[[rule]]", "[log]", "match", "buffers", ...).
std::string unknown_key_message(std::string_view key, std::string_view where,
                                std::span<const std::string_view> allowed);

}  // namespace tcptune::config
