// Per-request latencies a program hands to `tcptune ab`: the file TCPTUNE_AB_LATENCY_FILE names,
// to which it appends one latency per line. A number alone is in seconds (as `curl -w
// '%{time_total}\n'` prints, and as a difference of time.perf_counter() or `date +%s.%N` is);
// a unit may follow it: "s", "ms", "us" or "ns" ("12.5ms", "850 us"). Empty lines are skipped.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tcptune::cli {

constexpr const char* kLatencyFileVariable = "TCPTUNE_AB_LATENCY_FILE";

struct RequestLatencies {
  std::vector<double> ms;       // in the file's order, in milliseconds
  std::uint64_t bad_lines = 0;  // not a latency: ignored
  std::string first_bad;        // "line N: 'text'", for the note that says why they were left out
  bool readable = false;        // the file existed after the run
};

// One line: the latency in milliseconds, or a negative value when the line is not a latency.
double parse_latency_line(std::string_view line);

RequestLatencies read_request_latencies(const std::string& path);

}  // namespace tcptune::cli
