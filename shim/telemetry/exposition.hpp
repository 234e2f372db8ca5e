// The text exposition format (0.0.4) as the merged textfile needs it: families with their HELP
// and TYPE, samples with exact values, and the comment lines that carry the merge's own state
// (the file's generation, and each live process's gauges). Parsed strictly, so that a file
// torn or edited by hand is noticed rather than summed into.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tcptune::telemetry {

// A sample's value in whole units and billionths: counters stay exact integers, and latency
// sums (seconds with nine decimals, i.e. whole nanoseconds) add and subtract without rounding.
struct SampleValue {
  std::uint64_t whole = 0;
  std::uint32_t nanos = 0;  // < 1e9

  friend bool operator==(const SampleValue&, const SampleValue&) = default;
  SampleValue& operator+=(const SampleValue& other) noexcept;
  // Saturates at zero.
  SampleValue& operator-=(const SampleValue& other) noexcept;
};
SampleValue sample_value_from_ns(std::uint64_t ns) noexcept;
// "12", "0.5", "1.000000001"; also "1.2e-05" (rounded to nanounits). Negative, NaN, infinite:
// nullopt.
std::optional<SampleValue> parse_sample_value(std::string_view text);
std::string format_sample_value(const SampleValue& value);
// A label's value as the format writes it between quotes (\\, \" and \n escaped).
std::string escape_label_value(std::string_view text);

// Who wrote a live entry: the pid, its start time (clock ticks since boot, from
// /proc/PID/stat, so that a reused pid is not taken for the writer) and its pid namespace
// (the inode of /proc/PID/ns/pid; a pid means nothing in another namespace). 0: unknown.
struct ProcessIdentity {
  long pid = 0;
  std::uint64_t start_ticks = 0;
  std::uint64_t pid_namespace = 0;

  friend bool operator==(const ProcessIdentity&, const ProcessIdentity&) = default;
};

struct Sample {
  std::string name;    // the sample's name: a family's, or with _bucket, _sum, _count
  std::string labels;  // between the braces, as written ("" when none)
  std::string key;     // name and labels in name order: equal keys are the same series
  std::string group;   // the labels without `le`: a histogram's buckets, sum and count share it
  SampleValue value;
};

struct Family {
  std::string name;
  std::string type;  // counter, gauge, histogram, summary, untyped
  std::string help;  // empty: no HELP line
  std::vector<Sample> samples;
};

// A live process's share of one gauge series.
struct LiveEntry {
  ProcessIdentity process;
  Sample sample;
};

struct Exposition {
  std::string generation;  // empty: a file with no merge header (written by hand or an older version)
  std::vector<Family> families;
  std::vector<LiveEntry> live;

  Family* find_family(std::string_view name);
  const Family* find_family(std::string_view name) const;
};

// nullopt with `error` set ("line 7: ...") when the text is not a well-formed exposition:
// a sample without a TYPE before it, a second TYPE, bad labels, a duplicate series, a value
// that is not a non-negative number, a timestamp, a missing final newline.
std::optional<Exposition> parse_exposition(std::string_view text, std::string& error);
// The merge header and live entries first (comments, which node_exporter skips), then each
// family: HELP, TYPE, samples.
std::string render_exposition(const Exposition& exposition);

}  // namespace tcptune::telemetry
