#include "tuning_readers.hpp"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

#include "key_places.hpp"
#include "tcptune/config/buffer_plan.hpp"
#include "tcptune/config/keep_warm_presets.hpp"
#include "tcptune/config/sockopt_names.hpp"
#include "tcptune/config/value_parsers.hpp"

namespace tcptune::config {

namespace {

template <typename T>
std::optional<T> take(TomlWalk& walk, const toml::node& node, Parsed<T> (*parse)(const PolicyValue&)) {
  return walk.take(node, parse(policy_value(node)));
}

// protocol = "http1-client": a preset's bytes and the side that may send them.
bool read_keep_warm_protocol(TomlWalk& walk, const toml::node& node, KeepWarm& keep_warm) {
  const auto name = walk.take(node, parse_string(policy_value(node), "protocol"));
  if (!name) {
    return false;
  }
  const KeepWarmPreset* preset = find_keep_warm_preset(*name);
  if (preset == nullptr) {
    return walk.fail(node.source(), "unknown keep_warm protocol \"" + *name + "\"; known: " + keep_warm_preset_names());
  }
  keep_warm.protocol = preset->name;
  keep_warm.payload = preset->payload;
  keep_warm.side = preset->side;
  keep_warm.framing = preset->framing;
  return true;
}

}  // namespace

void read_nodelay(TomlWalk& walk, std::string_view /*name*/, const TomlNode& value, Tuning& into) {
  into.nodelay = take(walk, value.node, parse_nodelay);
}

void read_congestion(TomlWalk& walk, std::string_view /*name*/, const TomlNode& value, Tuning& into) {
  into.congestion = take(walk, value.node, parse_congestion);
}

void read_user_timeout(TomlWalk& walk, std::string_view name, const TomlNode& value, Tuning& into) {
  using std::chrono::milliseconds;
  // TCP_USER_TIMEOUT takes milliseconds in an int.
  into.user_timeout = walk.take(
      value.node, parse_duration_value(policy_value(value.node), name, milliseconds(1), milliseconds(INT32_MAX)));
}

void read_notsent_lowat(TomlWalk& walk, std::string_view name, const TomlNode& value, Tuning& into) {
  walk.note_size_reading(value.node);
  if (auto bytes = walk.take(value.node, parse_size_value(policy_value(value.node), name, 1, INT32_MAX))) {
    into.notsent_lowat = static_cast<std::uint32_t>(*bytes);
  }
}

void read_tos(TomlWalk& walk, std::string_view /*name*/, const TomlNode& value, Tuning& into) {
  if (auto tos = take(walk, value.node, parse_tos)) {
    into.tos = *tos;
  }
}

void read_buffers(TomlWalk& walk, std::string_view /*name*/, const TomlNode& value, Tuning& into) {
  const toml::node& node = value.node;
  const toml::table* table = walk.as_table(node, "buffers");
  if (table == nullptr) {
    return;
  }
  const std::size_t mark = walk.mark();
  walk.check_keys(*table, kBufferKeys, "buffers");
  BufferSpec spec;
  constexpr std::uint64_t kMinBuffer = 1024;
  constexpr std::uint64_t kMaxBuffer = 1ULL << 30;
  if (const toml::node* bandwidth = table->get("bandwidth")) {
    spec.bandwidth_bytes_per_s = take(walk, *bandwidth, parse_bandwidth);
  }
  if (const toml::node* rtt = table->get("rtt")) {
    if (const std::optional<std::optional<Duration>> parsed = take(walk, *rtt, parse_rtt)) {
      spec.rtt = *parsed;
      spec.rtt_auto = !parsed->has_value();
    }
  }
  if (const toml::node* sndbuf = table->get("sndbuf")) {
    walk.note_size_reading(*sndbuf);
    spec.sndbuf = walk.take(*sndbuf, parse_size_value(policy_value(*sndbuf), "sndbuf", kMinBuffer, kMaxBuffer));
  }
  if (const toml::node* rcvbuf = table->get("rcvbuf")) {
    walk.note_size_reading(*rcvbuf);
    spec.rcvbuf = walk.take(*rcvbuf, parse_size_value(policy_value(*rcvbuf), "rcvbuf", kMinBuffer, kMaxBuffer));
  }
  if (walk.failed_since(mark)) {
    return;
  }
  const bool has_rtt = spec.rtt.has_value() || spec.rtt_auto;
  if (spec.bandwidth_bytes_per_s.has_value() != has_rtt) {
    walk.fail(node.source(), spec.bandwidth_bytes_per_s.has_value()
                                 ? "'buffers' has 'bandwidth' without 'rtt' (a duration or \"auto\")"
                                 : "'buffers' has 'rtt' without 'bandwidth'");
    return;
  }
  if (!spec.bandwidth_bytes_per_s.has_value() && !spec.sndbuf.has_value() && !spec.rcvbuf.has_value()) {
    walk.fail(node.source(), "'buffers' needs 'bandwidth' and 'rtt', or 'sndbuf'/'rcvbuf'");
    return;
  }
  if (spec.bandwidth_bytes_per_s.has_value() && spec.rtt.has_value()) {
    // The value the shim would pass to setsockopt; it saturates at INT32_MAX instead of overflowing.
    const std::uint64_t bdp = bdp_target(*spec.bandwidth_bytes_per_s, *spec.rtt);
    if (bdp > kMaxBuffer) {
      const bool saturated = bdp == static_cast<std::uint64_t>(std::numeric_limits<std::int32_t>::max());
      walk.fail(node.source(), "'buffers': bandwidth x rtt is " + std::string(saturated ? "more than " : "") +
                                   format_size(bdp) + ", above the 1 GiB limit");
      return;
    }
  }
  into.buffers = spec;
}

void read_keepalive(TomlWalk& walk, std::string_view /*name*/, const TomlNode& value, Tuning& into) {
  const toml::node& node = value.node;
  const toml::table* table = walk.as_table(node, "keepalive");
  if (table == nullptr) {
    return;
  }
  const std::size_t mark = walk.mark();
  walk.check_keys(*table, kKeepaliveKeys, "keepalive");
  Keepalive keepalive;
  const toml::node* idle = table->get("idle");
  if (idle == nullptr) {
    walk.fail(node.source(), "'keepalive' needs 'idle' (a duration such as \"30s\")");
    return;
  }
  constexpr auto kMaxKeepalive = std::chrono::seconds(32767);  // the kernel's MAX_TCP_KEEPIDLE
  if (auto d =
          walk.take(*idle, parse_duration_value(policy_value(*idle), "idle", std::chrono::seconds(1), kMaxKeepalive))) {
    keepalive.idle = *d;
  }
  if (const toml::node* interval = table->get("interval")) {
    if (auto d = walk.take(*interval, parse_duration_value(policy_value(*interval), "interval", std::chrono::seconds(1),
                                                           kMaxKeepalive))) {
      keepalive.interval = *d;
    }
  }
  if (const toml::node* count = table->get("count")) {
    if (auto c = walk.take(*count, parse_integer(policy_value(*count), "count", 1, 127))) {
      keepalive.count = static_cast<int>(*c);
    }
  }
  if (!walk.failed_since(mark)) {
    into.keepalive = keepalive;
  }
}

// keep_warm = { protocol = "http1-client" }, { heartbeat = "\n" } or { heartbeat_hex = "0a" },
// interval = "auto" or 10ms..1h, max_idle = 1s..24h.
void read_keep_warm(TomlWalk& walk, std::string_view /*name*/, const TomlNode& value, Tuning& into) {
  const toml::node& node = value.node;
  const toml::table* table = walk.as_table(node, "keep_warm");
  if (table == nullptr) {
    return;
  }
  const std::size_t mark = walk.mark();
  walk.check_keys(*table, kKeepWarmKeys, "keep_warm");
  KeepWarm keep_warm;
  // Exactly one says what the heartbeat is; the second one written is the mistake.
  std::vector<std::pair<std::string_view, const toml::node*>> given;
  for (const std::string_view key : {"protocol", "heartbeat", "heartbeat_hex"}) {
    if (const toml::node* bytes = table->get(key)) {
      given.emplace_back(key, bytes);
    }
  }
  if (given.empty()) {
    walk.fail(node.source(), "'keep_warm' needs 'protocol' (one of " + keep_warm_preset_names() +
                                 "), 'heartbeat' (a string such as \"\\n\") or 'heartbeat_hex' (hex digits such as "
                                 "\"0a\")");
    return;
  }
  std::sort(given.begin(), given.end(), [](const auto& a, const auto& b) {
    const toml::source_position& pa = a.second->source().begin;
    const toml::source_position& pb = b.second->source().begin;
    return pa.line != pb.line ? pa.line < pb.line : pa.column < pb.column;
  });
  if (given.size() > 1) {
    walk.fail(given[1].second->source(), "'keep_warm' has both '" + std::string(given[0].first) + "' and '" +
                                             std::string(given[1].first) + "'; give one");
    return;
  }
  const auto [first_key, first] = given.front();
  if (first_key == "protocol") {
    read_keep_warm_protocol(walk, *first, keep_warm);
  } else if (std::optional<std::string> payload =
                 take(walk, *first, first_key == "heartbeat" ? parse_heartbeat : parse_heartbeat_hex)) {
    keep_warm.payload = std::move(*payload);
  }
  if (const toml::node* interval = table->get("interval")) {
    if (const std::optional<std::optional<Duration>> parsed = take(walk, *interval, parse_keep_warm_interval)) {
      keep_warm.interval = *parsed;
    }
  }
  if (const toml::node* max_idle = table->get("max_idle")) {
    if (const std::optional<Duration> parsed = take(walk, *max_idle, parse_keep_warm_max_idle)) {
      keep_warm.max_idle = *parsed;
    }
  }
  if (!walk.failed_since(mark)) {
    into.keep_warm = std::move(keep_warm);
  }
}

void read_sockopts(TomlWalk& walk, std::string_view /*name*/, const TomlNode& value, Tuning& into) {
  const toml::array* array = value.node.as_array();
  if (array == nullptr) {
    walk.fail(value.node.source(),
              "'sockopt' must be an array of tables such as [{ level = \"IPPROTO_TCP\", name = \"TCP_MAXSEG\", value "
              "= 1400 }]");
    return;
  }
  for (const toml::node& item : *array) {
    const toml::table* table = walk.as_table(item, "sockopt entry");
    if (table == nullptr) {
      continue;
    }
    walk.check_keys(*table, kSockoptKeys, "sockopt");
    const toml::node* level = table->get("level");
    const toml::node* name = table->get("name");
    const toml::node* number = table->get("value");
    if (level == nullptr || name == nullptr || number == nullptr) {
      walk.fail(item.source(), "a 'sockopt' entry needs 'level', 'name' and 'value'");
      continue;
    }
    const auto level_text = walk.take(*level, parse_string(policy_value(*level), "level"));
    const auto name_text = walk.take(*name, parse_string(policy_value(*name), "name"));
    const auto option_value = walk.take(*number, parse_integer(policy_value(*number), "value", INT32_MIN, INT32_MAX));
    if (!level_text || !name_text || !option_value) {
      continue;
    }
    const auto known_level = walk.take(*level, find_sockopt_level(*level_text));
    const auto known = walk.take(*name, find_socket_option(*name_text));
    if (!known_level || !known) {
      continue;
    }
    if (const std::string mismatch = sockopt_level_mismatch(*known, *known_level); !mismatch.empty()) {
      walk.fail(level->source(), mismatch);
      continue;
    }
    RawSockopt opt;
    opt.level = known->level;
    opt.name = known->option;
    opt.value = static_cast<int>(*option_value);
    opt.level_name = *level_text;
    opt.option_name = *name_text;
    into.sockopts.push_back(opt);
  }
}

}  // namespace tcptune::config
