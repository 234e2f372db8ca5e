#include "exposition.hpp"

#include <algorithm>
#include <charconv>
#include <limits>
#include <map>
#include <set>
#include <utility>

namespace tcptune::telemetry {

namespace {

constexpr std::uint32_t kNanosPerUnit = 1'000'000'000;
constexpr int kFractionDigits = 9;
constexpr std::string_view kMergeHeader = "# tcptune-merge ";
constexpr std::string_view kLiveHeader = "# tcptune-live ";

bool is_name_start(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':';
}
bool is_name_char(char c) {
  return is_name_start(c) || (c >= '0' && c <= '9');
}
bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

bool valid_metric_name(std::string_view name) {
  return !name.empty() && is_name_start(name[0]) && std::all_of(name.begin(), name.end(), is_name_char);
}

using LabelPairs = std::vector<std::pair<std::string, std::string>>;

std::string serialize(const LabelPairs& pairs) {
  std::string out;
  for (const auto& [name, value] : pairs) {
    if (!out.empty()) {
      out += ',';
    }
    out += name + "=\"" + escape_label_value(value) + "\"";
  }
  return out;
}

// `name="value",...` (a trailing comma allowed) into pairs; false on anything else or a
// repeated name.
bool parse_labels(std::string_view text, LabelPairs& pairs) {
  std::size_t at = 0;
  while (at < text.size()) {
    const std::size_t name_start = at;
    while (at < text.size() && is_name_char(text[at])) {
      ++at;
    }
    const std::string name(text.substr(name_start, at - name_start));
    if (name.empty() || !is_name_start(name[0]) || at + 1 >= text.size() || text[at] != '=' || text[at + 1] != '"') {
      return false;
    }
    at += 2;
    std::string value;
    for (;; ++at) {
      if (at >= text.size()) {
        return false;
      }
      const char c = text[at];
      if (c == '"') {
        break;
      }
      if (c == '\\') {
        if (++at >= text.size()) {
          return false;
        }
        const char escaped = text[at];
        if (escaped == 'n') {
          value += '\n';
        } else if (escaped == '\\' || escaped == '"') {
          value += escaped;
        } else {
          return false;
        }
      } else {
        value += c;
      }
    }
    ++at;  // the closing quote
    if (std::any_of(pairs.begin(), pairs.end(), [&](const auto& pair) { return pair.first == name; })) {
      return false;
    }
    pairs.emplace_back(name, std::move(value));
    if (at < text.size()) {
      if (text[at] != ',') {
        return false;
      }
      ++at;
    }
  }
  return true;
}

// One sample line: name, optional labels, one space or more, the value; no timestamp (the
// textfile collector refuses them).
std::optional<Sample> parse_sample(std::string_view line, std::string& why) {
  std::size_t at = 0;
  while (at < line.size() && is_name_char(line[at])) {
    ++at;
  }
  Sample sample;
  sample.name = std::string(line.substr(0, at));
  if (!valid_metric_name(sample.name)) {
    why = "not a sample";
    return std::nullopt;
  }
  LabelPairs pairs;
  if (at < line.size() && line[at] == '{') {
    // The closing brace is the first one outside a quoted value.
    std::size_t end = at + 1;
    bool quoted = false;
    for (; end < line.size(); ++end) {
      const char c = line[end];
      if (quoted && c == '\\') {
        ++end;
      } else if (c == '"') {
        quoted = !quoted;
      } else if (!quoted && c == '}') {
        break;
      }
    }
    if (end >= line.size() || !parse_labels(line.substr(at + 1, end - at - 1), pairs)) {
      why = "bad labels";
      return std::nullopt;
    }
    at = end + 1;
  }
  if (at >= line.size() || (line[at] != ' ' && line[at] != '\t')) {
    why = "no value";
    return std::nullopt;
  }
  while (at < line.size() && (line[at] == ' ' || line[at] == '\t')) {
    ++at;
  }
  std::size_t value_end = at;
  while (value_end < line.size() && line[value_end] != ' ' && line[value_end] != '\t') {
    ++value_end;
  }
  if (line.find_first_not_of(" \t", value_end) != std::string_view::npos) {
    why = "a timestamp, which a textfile may not carry";
    return std::nullopt;
  }
  const auto value = parse_sample_value(line.substr(at, value_end - at));
  if (!value) {
    why = "the value is not a non-negative number";
    return std::nullopt;
  }
  sample.value = *value;
  sample.labels = serialize(pairs);
  std::sort(pairs.begin(), pairs.end());
  sample.key = sample.name + "{" + serialize(pairs) + "}";
  std::erase_if(pairs, [](const auto& pair) { return pair.first == "le" || pair.first == "quantile"; });
  sample.group = serialize(pairs);
  return sample;
}

// The family a sample belongs to: its own name, or for histograms and summaries the name
// less _bucket, _sum or _count.
bool belongs_to(const Sample& sample, const Family& family) {
  if (sample.name == family.name) {
    return true;
  }
  if (family.type != "histogram" && family.type != "summary") {
    return false;
  }
  for (const std::string_view suffix : {"_bucket", "_sum", "_count"}) {
    if (sample.name.size() == family.name.size() + suffix.size() && sample.name.starts_with(family.name) &&
        sample.name.ends_with(suffix)) {
      return suffix != "_bucket" || family.type == "histogram";
    }
  }
  return false;
}

bool parse_uint(std::string_view text, std::uint64_t& out) {
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), out);
  return error == std::errc() && end == text.data() + text.size() && !text.empty();
}

// "pid=1 start=2 pidns=3 " then a sample line.
std::optional<LiveEntry> parse_live(std::string_view rest, std::string& why) {
  LiveEntry entry;
  for (const std::string_view field : {"pid=", "start=", "pidns="}) {
    const std::size_t space = rest.find(' ');
    std::uint64_t number = 0;
    if (!rest.starts_with(field) || space == std::string_view::npos ||
        !parse_uint(rest.substr(field.size(), space - field.size()), number)) {
      why = "a bad live entry";
      return std::nullopt;
    }
    if (field == "pid=") {
      entry.process.pid = static_cast<long>(number);
    } else if (field == "start=") {
      entry.process.start_ticks = number;
    } else {
      entry.process.pid_namespace = number;
    }
    rest.remove_prefix(space + 1);
  }
  auto sample = parse_sample(rest, why);
  if (!sample) {
    return std::nullopt;
  }
  entry.sample = std::move(*sample);
  return entry;
}

}  // namespace

std::string escape_label_value(std::string_view text) {
  std::string out;
  for (const char c : text) {
    if (c == '\\' || c == '"') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

SampleValue& SampleValue::operator+=(const SampleValue& other) noexcept {
  whole += other.whole;
  nanos += other.nanos;
  if (nanos >= kNanosPerUnit) {
    nanos -= kNanosPerUnit;
    ++whole;
  }
  return *this;
}

SampleValue& SampleValue::operator-=(const SampleValue& other) noexcept {
  if (whole < other.whole || (whole == other.whole && nanos < other.nanos)) {
    *this = {};
    return *this;
  }
  whole -= other.whole;
  if (nanos < other.nanos) {
    nanos += kNanosPerUnit;
    --whole;
  }
  nanos -= other.nanos;
  return *this;
}

SampleValue sample_value_from_ns(std::uint64_t ns) noexcept {
  return {ns / kNanosPerUnit, static_cast<std::uint32_t>(ns % kNanosPerUnit)};
}

std::optional<SampleValue> parse_sample_value(std::string_view text) {
  // Decimal digits with a point and an exponent, shifted by hand: exact, and free of the
  // locale that strtod would read.
  std::string digits;
  long point = -1;  // digits before the decimal point
  std::size_t at = 0;
  if (at < text.size() && text[at] == '+') {
    ++at;
  }
  for (; at < text.size(); ++at) {
    const char c = text[at];
    if (is_digit(c)) {
      digits += c;
    } else if (c == '.' && point < 0) {
      point = static_cast<long>(digits.size());
    } else {
      break;
    }
  }
  if (digits.empty()) {
    return std::nullopt;
  }
  if (point < 0) {
    point = static_cast<long>(digits.size());
  }
  if (at < text.size() && (text[at] == 'e' || text[at] == 'E')) {
    ++at;
    bool negative = false;
    if (at < text.size() && (text[at] == '+' || text[at] == '-')) {
      negative = text[at] == '-';
      ++at;
    }
    std::uint64_t exponent = 0;
    if (!parse_uint(text.substr(at), exponent) || exponent > 400) {
      return std::nullopt;
    }
    point += negative ? -static_cast<long>(exponent) : static_cast<long>(exponent);
    at = text.size();
  }
  if (at != text.size()) {
    return std::nullopt;
  }
  if (point < 0) {
    digits.insert(0, static_cast<std::size_t>(-point), '0');
    point = 0;
  }
  if (static_cast<std::size_t>(point) > digits.size()) {
    digits.append(static_cast<std::size_t>(point) - digits.size(), '0');
  }
  std::string whole_text = digits.substr(0, static_cast<std::size_t>(point));
  std::string fraction = digits.substr(static_cast<std::size_t>(point));
  whole_text.erase(0, std::min(whole_text.find_first_not_of('0'), whole_text.size()));
  fraction.resize(kFractionDigits, '0');  // beyond nanounits: cut
  SampleValue value;
  if (!whole_text.empty() && !parse_uint(whole_text, value.whole)) {
    return std::nullopt;  // beyond 2^64
  }
  std::uint64_t nanos = 0;
  (void)parse_uint(fraction, nanos);
  value.nanos = static_cast<std::uint32_t>(nanos);
  return value;
}

std::string format_sample_value(const SampleValue& value) {
  std::string out = std::to_string(value.whole);
  if (value.nanos != 0) {
    std::string fraction = std::to_string(value.nanos);
    fraction.insert(0, kFractionDigits - fraction.size(), '0');
    fraction.erase(fraction.find_last_not_of('0') + 1);
    out += "." + fraction;
  }
  return out;
}

Family* Exposition::find_family(std::string_view name) {
  for (Family& family : families) {
    if (family.name == name) {
      return &family;
    }
  }
  return nullptr;
}

const Family* Exposition::find_family(std::string_view name) const {
  return const_cast<Exposition*>(this)->find_family(name);
}

std::optional<Exposition> parse_exposition(std::string_view text, std::string& error) {
  if (!text.empty() && !text.ends_with('\n')) {
    error = "the last line has no newline (a file cut short)";
    return std::nullopt;
  }
  Exposition out;
  std::map<std::string, std::size_t, std::less<>> family_index;
  std::set<std::string, std::less<>> seen_keys;
  std::set<std::string, std::less<>> typed;
  std::size_t current = std::numeric_limits<std::size_t>::max();  // the family whose lines these are
  std::size_t number = 0;
  auto fail = [&](const std::string& why) {
    error = "line " + std::to_string(number) + ": " + why;
    return std::nullopt;
  };
  auto family_named = [&](const std::string& name) -> std::size_t {
    if (const auto it = family_index.find(name); it != family_index.end()) {
      return it->second;
    }
    out.families.push_back({name, "untyped", {}, {}});
    family_index.emplace(name, out.families.size() - 1);
    return out.families.size() - 1;
  };
  while (!text.empty()) {
    ++number;
    const std::size_t newline = text.find('\n');
    const std::string_view line = text.substr(0, newline);
    text.remove_prefix(newline + 1);
    if (line.find('\0') != std::string_view::npos) {
      return fail("a NUL byte");
    }
    if (line.starts_with(kMergeHeader)) {
      const std::string_view rest = line.substr(kMergeHeader.size());
      if (!rest.starts_with("generation=") || rest.size() == 11 || !out.generation.empty()) {
        return fail("a bad merge header");
      }
      out.generation = std::string(rest.substr(11));
      continue;
    }
    if (line.starts_with(kLiveHeader)) {
      std::string why;
      auto entry = parse_live(line.substr(kLiveHeader.size()), why);
      if (!entry) {
        return fail(why);
      }
      out.live.push_back(std::move(*entry));
      continue;
    }
    if (line.starts_with("# HELP ") || line.starts_with("# TYPE ")) {
      const bool is_type = line[2] == 'T';
      std::string_view rest = line.substr(7);
      const std::size_t space = rest.find(' ');
      const std::string name(rest.substr(0, space));
      const std::string_view argument = space == std::string_view::npos ? std::string_view() : rest.substr(space + 1);
      if (!valid_metric_name(name)) {
        return fail("a bad metric name");
      }
      const bool known = family_index.contains(name);
      const std::size_t index = family_named(name);
      Family& family = out.families[index];
      if (known && index != current) {
        return fail(name + "'s lines are not together");
      }
      current = index;
      if (is_type) {
        static constexpr std::string_view kTypes[] = {"counter", "gauge", "histogram", "summary", "untyped"};
        if (std::find(std::begin(kTypes), std::end(kTypes), argument) == std::end(kTypes)) {
          return fail("an unknown type");
        }
        if (!family.samples.empty() || !typed.insert(name).second) {
          return fail("a TYPE after " + name + "'s samples or a second TYPE");
        }
        family.type = std::string(argument);
      } else {
        family.help = std::string(argument);
      }
      continue;
    }
    if (line.empty() || line.starts_with('#')) {
      continue;  // blank lines and other comments mean nothing
    }
    std::string why;
    auto sample = parse_sample(line, why);
    if (!sample) {
      return fail(why);
    }
    std::size_t index = current;
    if (index >= out.families.size() || !belongs_to(*sample, out.families[index])) {
      if (family_index.contains(sample->name)) {
        return fail(sample->name + "'s lines are not together");
      }
      index = family_named(sample->name);
      current = index;
    }
    if (!seen_keys.insert(sample->key).second) {
      return fail("a second sample of the series " + sample->key);
    }
    out.families[index].samples.push_back(std::move(*sample));
  }
  return out;
}

std::string render_exposition(const Exposition& exposition) {
  std::string out;
  if (!exposition.generation.empty()) {
    out.append(kMergeHeader).append("generation=").append(exposition.generation).append("\n");
  }
  for (const LiveEntry& entry : exposition.live) {
    out.append(kLiveHeader)
        .append("pid=")
        .append(std::to_string(entry.process.pid))
        .append(" start=")
        .append(std::to_string(entry.process.start_ticks))
        .append(" pidns=")
        .append(std::to_string(entry.process.pid_namespace))
        .append(" ")
        .append(entry.sample.name)
        .append("{")
        .append(entry.sample.labels)
        .append("} ")
        .append(format_sample_value(entry.sample.value))
        .append("\n");
  }
  for (const Family& family : exposition.families) {
    if (!family.help.empty()) {
      out.append("# HELP ").append(family.name).append(" ").append(family.help).append("\n");
    }
    out.append("# TYPE ").append(family.name).append(" ").append(family.type).append("\n");
    for (const Sample& sample : family.samples) {
      out.append(sample.name);
      if (!sample.labels.empty()) {
        out.append("{").append(sample.labels).append("}");
      }
      out.append(" ").append(format_sample_value(sample.value)).append("\n");
    }
  }
  return out;
}

}  // namespace tcptune::telemetry
