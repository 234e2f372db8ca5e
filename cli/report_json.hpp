// `tcptune report --json`: the summary as one JSON object, keys in the order docs/records-and-metrics.md
// lists them.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "log_summary.hpp"

namespace tcptune::cli {

// {"by", "groups": [{"key", "connections", "writes_unmeasured_connections",
// "connections_without_record", counters..., "write_latency_us", "ack_latency_us"}], "total",
// "records", "skipped_lines", "uncounted_dropped_records"}; latencies in microseconds to 3 decimals.
nlohmann::ordered_json summary_json(const LogSummary& summary, const std::string& by);
// {"by": "callsite", "sites": [{"callsite", "slow_writes", "total_us", "max_us"}], "slow_writes_without_callsite"};
// `sites` in the order given (the costliest first), times to 1 decimal.
nlohmann::ordered_json callsites_json(const std::vector<std::pair<std::string, SlowWriteSite>>& sites,
                                      std::uint64_t without_callsite);
// One line; bytes that are not UTF-8 (a program name, say) become U+FFFD rather than an error.
std::string to_json_line(const nlohmann::ordered_json& value);

}  // namespace tcptune::cli
