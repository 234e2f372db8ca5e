// TOML policy loader. Keys (see README "Policy reference"):
//   version = 1
//   [defaults] and every [[rule]]: nodelay, buffers {bandwidth, rtt, sndbuf, rcvbuf},
//     override_app_buffers, congestion, keepalive {idle, interval, count}, user_timeout,
//     notsent_lowat, thin_linear_timeouts, quickack, tos, sockopt [{level, name, value}],
//     keep_warm {protocol, heartbeat or heartbeat_hex, interval, max_idle}
//   [[rule]] also: name, match {peer, port, role, program}
//   [log]: path, level
// Every error names FILE:LINE:COLUMN of the offending key or value.
#include "tcptune/config/policy_loader.hpp"

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/ip.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <toml++/toml.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <limits>
#include <optional>
#include <set>
#include <sstream>
#include <system_error>
#include <utility>
#include <vector>

#include "tcptune/config/buffer_plan.hpp"
#include "tcptune/config/cidr.hpp"
#include "tcptune/config/escape.hpp"
#include "tcptune/config/file_type.hpp"
#include "tcptune/config/keep_warm_presets.hpp"
#include "tcptune/config/toml_input_guard.hpp"
#include "tcptune/config/units.hpp"

namespace tcptune::config {

std::string PolicyError::to_string() const {
  std::string out = pos.file;
  if (pos.line != 0) {
    out += ":" + std::to_string(pos.line) + ":" + std::to_string(pos.column);
  }
  return out + ": " + message;
}

namespace {

constexpr std::string_view kTuningKeys[] = {
    "nodelay",      "buffers",       "override_app_buffers", "congestion", "keepalive", "keep_warm",
    "user_timeout", "notsent_lowat", "thin_linear_timeouts", "quickack",   "tos",       "sockopt",
    "callsite"};

struct NamedOption {
  std::string_view name;
  int level;
  int option;
};
constexpr NamedOption kSockopts[] = {
    {"TCP_MAXSEG", IPPROTO_TCP, TCP_MAXSEG},
    {"TCP_NODELAY", IPPROTO_TCP, TCP_NODELAY},
    {"TCP_KEEPIDLE", IPPROTO_TCP, TCP_KEEPIDLE},
    {"TCP_KEEPINTVL", IPPROTO_TCP, TCP_KEEPINTVL},
    {"TCP_KEEPCNT", IPPROTO_TCP, TCP_KEEPCNT},
    {"TCP_SYNCNT", IPPROTO_TCP, TCP_SYNCNT},
    {"TCP_LINGER2", IPPROTO_TCP, TCP_LINGER2},
    {"TCP_DEFER_ACCEPT", IPPROTO_TCP, TCP_DEFER_ACCEPT},
    {"TCP_WINDOW_CLAMP", IPPROTO_TCP, TCP_WINDOW_CLAMP},
    {"TCP_QUICKACK", IPPROTO_TCP, TCP_QUICKACK},
    {"TCP_USER_TIMEOUT", IPPROTO_TCP, TCP_USER_TIMEOUT},
    {"TCP_NOTSENT_LOWAT", IPPROTO_TCP, TCP_NOTSENT_LOWAT},
    {"TCP_THIN_LINEAR_TIMEOUTS", IPPROTO_TCP, TCP_THIN_LINEAR_TIMEOUTS},
    {"TCP_FASTOPEN", IPPROTO_TCP, TCP_FASTOPEN},
    {"TCP_FASTOPEN_CONNECT", IPPROTO_TCP, TCP_FASTOPEN_CONNECT},
    {"SO_KEEPALIVE", SOL_SOCKET, SO_KEEPALIVE},
    {"SO_PRIORITY", SOL_SOCKET, SO_PRIORITY},
    {"SO_MARK", SOL_SOCKET, SO_MARK},
    {"SO_SNDBUF", SOL_SOCKET, SO_SNDBUF},
    {"SO_RCVBUF", SOL_SOCKET, SO_RCVBUF},
    {"SO_REUSEADDR", SOL_SOCKET, SO_REUSEADDR},
    {"SO_REUSEPORT", SOL_SOCKET, SO_REUSEPORT},
    {"IP_TOS", IPPROTO_IP, IP_TOS},
    {"IP_TTL", IPPROTO_IP, IP_TTL},
    {"IPV6_TCLASS", IPPROTO_IPV6, IPV6_TCLASS},
    {"IPV6_UNICAST_HOPS", IPPROTO_IPV6, IPV6_UNICAST_HOPS},
};
constexpr std::pair<std::string_view, int> kLevels[] = {{"SOL_SOCKET", SOL_SOCKET},
                                                        {"IPPROTO_TCP", IPPROTO_TCP},
                                                        {"IPPROTO_IP", IPPROTO_IP},
                                                        {"IPPROTO_IPV6", IPPROTO_IPV6}};

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) {
    row[j] = j;
  }
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

template <typename Range>
std::string did_you_mean(std::string_view word, const Range& candidates) {
  std::string best;
  std::size_t best_distance = 3;
  for (const auto& candidate : candidates) {
    const std::string_view name = candidate;
    const std::size_t distance = edit_distance(word, name);
    if (distance < best_distance) {
      best_distance = distance;
      best = name;
    }
  }
  return best.empty() ? "" : "; did you mean '" + best + "'?";
}

std::string describe(const toml::node& node) {
  std::ostringstream out;
  switch (node.type()) {
    case toml::node_type::string: out << '"' << *node.value<std::string>() << '"'; break;
    case toml::node_type::table: out << "a table"; break;
    case toml::node_type::array: out << "an array"; break;
    case toml::node_type::boolean: out << (*node.value<bool>() ? "true" : "false"); break;
    case toml::node_type::integer: out << *node.value<std::int64_t>(); break;
    case toml::node_type::floating_point: out << *node.value<double>(); break;
    default: out << "a date or time"; break;
  }
  return out.str();
}

class Loader {
 public:
  explicit Loader(std::string source) : source_(std::move(source)) {}

  LoadResult load(std::string_view text) {
    toml::parse_result parsed = toml::parse(text, source_);
    if (!parsed) {
      const auto& error = parsed.error();
      // escaped: toml++ quotes what it saw raw ("saw 't\n'"), and the error must stay one line
      PolicyError e{position(error.source()),
                    escape_for_display("invalid TOML: " + std::string(error.description()), false)};
      return LoadResult{std::variant<Policy, PolicyError>(std::in_place_index<1>, e)};
    }
    Policy policy;
    policy.source = source_;
    read_top(parsed.table(), policy);
    if (error_.has_value()) {
      return LoadResult{std::variant<Policy, PolicyError>(std::in_place_index<1>, *error_)};
    }
    for (Rule& rule : policy.rules) {
      rule.effective = overlay(policy.defaults, rule.tuning);
    }
    return LoadResult{std::variant<Policy, PolicyError>(std::in_place_index<0>, std::move(policy))};
  }

 private:
  SourcePos position(const toml::source_region& region) const {
    return SourcePos{source_, static_cast<std::uint32_t>(region.begin.line),
                     static_cast<std::uint32_t>(region.begin.column)};
  }
  // Messages quote the policy's strings, which may hold a newline ("keep_warm = \"\\n\""): every
  // control character is escaped so an error stays one line.
  bool fail(const toml::source_region& region, const std::string& message) {
    if (!error_.has_value()) {
      error_ = PolicyError{position(region), escape_for_display(message, false)};
    }
    return false;
  }
  bool failed() const { return error_.has_value(); }

  template <std::size_t N>
  bool check_keys(const toml::table& table, const std::string_view (&allowed)[N], const std::string& where) {
    for (auto&& [key, node] : table) {
      if (std::find(std::begin(allowed), std::end(allowed), key.str()) == std::end(allowed)) {
        return fail(key.source(),
                    "unknown key '" + std::string(key.str()) + "' in " + where + did_you_mean(key.str(), allowed));
      }
    }
    return true;
  }

  const toml::table* as_table(const toml::node& node, const std::string& name) {
    const toml::table* table = node.as_table();
    if (table == nullptr) {
      fail(node.source(), "'" + name + "' must be a table, not " + describe(node));
    }
    return table;
  }

  std::optional<std::string> as_string(const toml::node& node, const std::string& name) {
    if (const auto* s = node.as_string()) {
      return s->get();
    }
    fail(node.source(), "'" + name + "' must be a string, not " + describe(node));
    return std::nullopt;
  }

  std::optional<bool> as_bool(const toml::node& node, const std::string& name) {
    if (const auto* b = node.as_boolean()) {
      return b->get();
    }
    fail(node.source(), "'" + name + "' must be true or false, not " + describe(node));
    return std::nullopt;
  }

  std::optional<std::int64_t> as_int(const toml::node& node, const std::string& name, std::int64_t min,
                                     std::int64_t max) {
    const auto* i = node.as_integer();
    if (i == nullptr) {
      fail(node.source(), "'" + name + "' must be an integer, not " + describe(node));
      return std::nullopt;
    }
    if (i->get() < min || i->get() > max) {
      fail(node.source(), "'" + name + "' must be between " + std::to_string(min) + " and " + std::to_string(max) +
                              ", not " + std::to_string(i->get()));
      return std::nullopt;
    }
    return i->get();
  }

  // Sizes: "64KiB" or a plain integer of bytes.
  std::optional<std::uint64_t> as_size(const toml::node& node, const std::string& name, std::uint64_t min,
                                       std::uint64_t max) {
    std::uint64_t value = 0;
    if (const auto* i = node.as_integer()) {
      if (i->get() < 0) {
        fail(node.source(), "'" + name + "' must not be negative");
        return std::nullopt;
      }
      value = static_cast<std::uint64_t>(i->get());
    } else if (const auto* s = node.as_string()) {
      const Parsed<std::uint64_t> parsed = parse_size(s->get());
      if (!parsed.ok()) {
        fail(node.source(), "'" + name + "': " + parsed.error());
        return std::nullopt;
      }
      value = parsed.value();
    } else {
      fail(node.source(), "'" + name + "' must be a size such as \"64KiB\", not " + describe(node));
      return std::nullopt;
    }
    if (value < min || value > max) {
      fail(node.source(), "'" + name + "' must be between " + format_size(min) + " and " + format_size(max) + ", not " +
                              format_size(value));
      return std::nullopt;
    }
    return value;
  }

  std::optional<Duration> as_duration(const toml::node& node, const std::string& name, Duration min, Duration max) {
    const auto text = node.as_string();
    if (text == nullptr) {
      fail(node.source(), "'" + name + "' must be a duration such as \"500ms\", not " + describe(node));
      return std::nullopt;
    }
    const Parsed<Duration> parsed = parse_duration(text->get());
    if (!parsed.ok()) {
      fail(node.source(), "'" + name + "': " + parsed.error());
      return std::nullopt;
    }
    if (parsed.value() < min || parsed.value() > max) {
      fail(node.source(), "'" + name + "' must be between " + format_duration(min) + " and " + format_duration(max) +
                              ", not " + format_duration(parsed.value()));
      return std::nullopt;
    }
    return parsed.value();
  }

  // A string or an array of strings.
  std::vector<std::pair<std::string, const toml::node*>> string_list(const toml::node& node, const std::string& name) {
    std::vector<std::pair<std::string, const toml::node*>> out;
    if (const auto* s = node.as_string()) {
      out.emplace_back(s->get(), &node);
    } else if (const auto* array = node.as_array()) {
      for (const toml::node& item : *array) {
        if (const auto* is = item.as_string()) {
          out.emplace_back(is->get(), &item);
        } else {
          fail(item.source(), "'" + name + "' entries must be strings, not " + describe(item));
          return {};
        }
      }
    } else {
      fail(node.source(), "'" + name + "' must be a string or an array of strings, not " + describe(node));
    }
    return out;
  }

  void read_top(const toml::table& top, Policy& policy) {
    static constexpr std::string_view kTop[] = {"version", "defaults", "log", "rule"};
    if (!check_keys(top, kTop, "the policy")) {
      return;
    }
    if (const toml::node* version = top.get("version")) {
      if (const auto v = as_int(*version, "version", 1, 1)) {
        policy.version = static_cast<int>(*v);
      } else {
        error_->message = escape_for_display(
            "unsupported policy version " + describe(*version) + "; this tcptune reads version = 1", false);
        return;
      }
    }
    if (const toml::node* defaults = top.get("defaults")) {
      if (const toml::table* table = as_table(*defaults, "defaults")) {
        if (check_keys(*table, kTuningKeys, "[defaults]")) {
          read_tuning(*table, policy.defaults);
        }
      }
    }
    if (failed()) {
      return;
    }
    if (const toml::node* log = top.get("log")) {
      read_log(*log, policy.log);
    }
    if (const toml::node* rules = top.get("rule")) {
      const toml::array* array = rules->as_array();
      if (array == nullptr) {
        fail(rules->source(), "'rule' must be an array of tables: write [[rule]]");
        return;
      }
      std::set<std::string> names;
      for (const toml::node& node : *array) {
        if (failed()) {
          return;
        }
        if (policy.rules.size() == kMaxRules) {
          fail(node.source(), "more than " + std::to_string(kMaxRules) + " rules: this is rule " +
                                  std::to_string(kMaxRules + 1) +
                                  ", past the limit; merge rules that tune alike (match takes lists of peers, ports "
                                  "and programs)");
          return;
        }
        const toml::table* table = as_table(node, "rule");
        if (table == nullptr) {
          return;
        }
        Rule rule;
        rule.pos = position(node.source());
        rule.name = "rule " + std::to_string(policy.rules.size() + 1);
        read_rule(*table, rule);
        if (failed()) {
          return;
        }
        if (!names.insert(rule.name).second) {
          fail(table->get("name") != nullptr ? table->get("name")->source() : node.source(),
               "duplicate rule name \"" + rule.name + "\"");
          return;
        }
        policy.rules.push_back(std::move(rule));
      }
    }
  }

  void read_log(const toml::node& node, LogSettings& log) {
    const toml::table* table = as_table(node, "log");
    static constexpr std::string_view kLogKeys[] = {"path",     "level",      "format",       "prometheus_textfile",
                                                    "interval", "slow_write", "trace_writes", "rotate_size",
                                                    "keep",     "callsite",   "summary"};
    if (table == nullptr || !check_keys(*table, kLogKeys, "[log]")) {
      return;
    }
    if (const toml::node* path = table->get("path")) {
      if (auto s = as_string(*path, "path")) {
        log.path = *s;
      }
    }
    if (const toml::node* textfile = table->get("prometheus_textfile")) {
      if (auto text = as_string(*textfile, "prometheus_textfile")) {
        log.prometheus_textfile = *text;
      }
    }
    if (const toml::node* slow = table->get("slow_write")) {
      log.slow_write = as_duration(*slow, "slow_write", std::chrono::microseconds(1), std::chrono::hours(1));
    }
    if (const toml::node* rotate = table->get("rotate_size")) {
      if (auto size = as_size(*rotate, "rotate_size", 4096, std::uint64_t{1} << 40)) {
        log.rotate_size = *size;
      }
    }
    if (const toml::node* keep = table->get("keep")) {
      const auto* value = keep->as_integer();
      if (value == nullptr || value->get() < 1 || value->get() > 100) {
        fail(keep->source(), "'keep' must be a whole number from 1 to 100, not " + describe(*keep));
      } else {
        log.keep = static_cast<int>(value->get());
      }
    }
    if (const toml::node* summary = table->get("summary")) {
      if (auto b = as_bool(*summary, "summary")) {
        log.summary = *b;
      }
    }
    if (const toml::node* callsite = table->get("callsite")) {
      if (auto b = as_bool(*callsite, "callsite")) {
        log.callsite = *b;
      }
    }
    if (const toml::node* trace = table->get("trace_writes")) {
      if (auto b = as_bool(*trace, "trace_writes")) {
        log.trace_writes = *b;
      }
    }
    if (const toml::node* interval = table->get("interval")) {
      if (auto value = as_duration(*interval, "interval", std::chrono::milliseconds(100), std::chrono::hours(1))) {
        log.interval = *value;
      }
    }
    if (const toml::node* format = table->get("format")) {
      const auto s = format->as_string();
      if (s != nullptr && s->get() == "text") {
        log.format = LogFormat::text;
      } else if (s != nullptr && s->get() == "jsonl") {
        log.format = LogFormat::jsonl;
      } else {
        fail(format->source(), "'format' must be \"text\" or \"jsonl\", not " + describe(*format));
      }
    }
    if (const toml::node* level = table->get("level")) {
      static constexpr std::pair<std::string_view, LogLevel> kLevelNames[] = {
          {"trace", LogLevel::trace}, {"debug", LogLevel::debug}, {"info", LogLevel::info},
          {"warn", LogLevel::warn},   {"error", LogLevel::error}, {"off", LogLevel::off}};
      const auto s = level->as_string();
      for (const auto& [name, value] : kLevelNames) {
        if (s != nullptr && s->get() == name) {
          log.level = value;
          return;
        }
      }
      fail(level->source(),
           "'level' must be one of \"trace\", \"debug\", \"info\", \"warn\", \"error\", \"off\", not " +
               describe(*level));
    }
  }

  void read_rule(const toml::table& table, Rule& rule) {
    static constexpr std::string_view kRuleKeys[] = {
        "name",       "match",     "nodelay",      "buffers",       "override_app_buffers",
        "congestion", "keepalive", "user_timeout", "notsent_lowat", "thin_linear_timeouts",
        "quickack",   "tos",       "sockopt",      "callsite",      "keep_warm"};
    if (!check_keys(table, kRuleKeys, "[[rule]]")) {
      return;
    }
    if (const toml::node* name = table.get("name")) {
      if (auto s = as_string(*name, "name")) {
        if (s->empty()) {
          fail(name->source(), "'name' must not be empty");
          return;
        }
        rule.name = *s;
      }
    }
    if (const toml::node* match = table.get("match")) {
      read_match(*match, rule.match);
    }
    if (!failed()) {
      read_tuning(table, rule.tuning);
    }
    if (!failed()) {
      check_heartbeat_side(table, rule);
    }
  }

  // A preset valid from one side only, in a rule whose match takes only the other side's
  // sockets, could never send a heartbeat: say so rather than keep a rule that does nothing.
  void check_heartbeat_side(const toml::table& table, const Rule& rule) {
    const std::optional<KeepWarm>& keep_warm = rule.tuning.keep_warm;
    if (!keep_warm.has_value() || keep_warm->side == HeartbeatSide::both || rule.match.role == Role::any) {
      return;
    }
    const bool from_client = keep_warm->side == HeartbeatSide::client;
    if ((rule.match.role == Role::client) == from_client) {
      return;
    }
    const toml::node* keep_warm_node = table.get("keep_warm");
    const toml::node* protocol = keep_warm_node->as_table()->get("protocol");
    fail(protocol->source(), "keep_warm protocol \"" + keep_warm->protocol + "\" is only valid from the " +
                                 (from_client ? "client" : "server") + ", and this rule matches only " +
                                 (from_client ? "accepted (server-side) sockets (role = \"server\")"
                                              : "connections the program opens (role = \"client\")") +
                                 ", so it would never send a heartbeat; match role \"" +
                                 (from_client ? "client" : "server") + "\" or \"any\"");
  }

  void read_match(const toml::node& node, Match& match) {
    const toml::table* table = as_table(node, "match");
    static constexpr std::string_view kMatchKeys[] = {"peer", "port", "role", "program"};
    if (table == nullptr || !check_keys(*table, kMatchKeys, "match")) {
      return;
    }
    if (const toml::node* peer = table->get("peer")) {
      for (const auto& [text, item] : string_list(*peer, "peer")) {
        const Parsed<Cidr> cidr = parse_cidr(text);
        if (!cidr.ok()) {
          fail(item->source(), "'peer': " + cidr.error());
          return;
        }
        match.peers.push_back(cidr.value());
      }
    }
    if (const toml::node* port = table->get("port")) {
      read_ports(*port, match.ports);
    }
    if (const toml::node* role = table->get("role")) {
      const auto s = role->as_string();
      if (s != nullptr && s->get() == "client") {
        match.role = Role::client;
      } else if (s != nullptr && s->get() == "server") {
        match.role = Role::server;
      } else if (s != nullptr && s->get() == "any") {
        match.role = Role::any;
      } else {
        fail(role->source(), "'role' must be \"client\", \"server\" or \"any\", not " + describe(*role));
        return;
      }
    }
    if (const toml::node* program = table->get("program")) {
      for (const auto& entry : string_list(*program, "program")) {
        match.programs.push_back(entry.first);
      }
    }
  }

  void read_ports(const toml::node& node, std::vector<PortRange>& ports) {
    auto one = [&](const toml::node& item) {
      if (const auto* i = item.as_integer()) {
        if (i->get() < 1 || i->get() > 65535) {
          return fail(item.source(), "'port' must be 1..65535, not " + std::to_string(i->get()));
        }
        const auto port = static_cast<std::uint16_t>(i->get());
        ports.push_back({port, port});
        return true;
      }
      if (const auto* s = item.as_string()) {
        const std::string& text = s->get();
        const std::size_t dash = text.find('-');
        char* end = nullptr;
        const long first = std::strtol(text.c_str(), &end, 10);
        const bool first_ok =
            end != text.c_str() && (dash == std::string::npos ? *end == '\0' : end == text.c_str() + dash);
        long last = first;
        bool last_ok = true;
        if (dash != std::string::npos) {
          const char* rest = text.c_str() + dash + 1;
          last = std::strtol(rest, &end, 10);
          last_ok = end != rest && *end == '\0';
        }
        if (!first_ok || !last_ok || first < 1 || last > 65535 || first > 65535 || last < 1) {
          return fail(item.source(), "'port' \"" + text + "\" is not a port or range such as \"8000-8100\" (1..65535)");
        }
        if (first > last) {
          return fail(item.source(), "'port' range \"" + text + "\" is reversed; did you mean \"" +
                                         std::to_string(last) + "-" + std::to_string(first) + "\"?");
        }
        ports.push_back({static_cast<std::uint16_t>(first), static_cast<std::uint16_t>(last)});
        return true;
      }
      return fail(
          item.source(),
          "'port' must be a number, a range string such as \"8000-8100\", or an array of those, not " + describe(item));
    };
    if (const auto* array = node.as_array()) {
      for (const toml::node& item : *array) {
        if (!one(item)) {
          return;
        }
      }
    } else {
      one(node);
    }
  }

  void read_tuning(const toml::table& table, Tuning& tuning) {
    using std::chrono::milliseconds;
    if (const toml::node* node = table.get("nodelay")) {
      static constexpr std::pair<std::string_view, NodelayMode> kModes[] = {{"on", NodelayMode::on},
                                                                            {"force", NodelayMode::force},
                                                                            {"off", NodelayMode::off},
                                                                            {"keep", NodelayMode::keep}};
      const auto s = node->as_string();
      for (const auto& [name, mode] : kModes) {
        if (s != nullptr && s->get() == name) {
          tuning.nodelay = mode;
        }
      }
      if (!tuning.nodelay.has_value()) {
        fail(node->source(), "'nodelay' must be one of \"on\", \"force\", \"off\", \"keep\", not " + describe(*node));
        return;
      }
    }
    if (const toml::node* node = table.get("buffers")) {
      read_buffers(*node, tuning);
    }
    if (const toml::node* node = table.get("override_app_buffers")) {
      tuning.override_app_buffers = as_bool(*node, "override_app_buffers");
    }
    if (const toml::node* node = table.get("congestion")) {
      if (auto s = as_string(*node, "congestion")) {
        const bool valid = !s->empty() && s->size() <= 15 && std::all_of(s->begin(), s->end(), [](char c) {
          return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
        });
        if (!valid) {
          fail(node->source(), "'congestion' \"" + *s +
                                   "\" is not a congestion control name (lower-case letters, digits, _; at most 15), "
                                   "e.g. \"bbr\" or \"cubic\"");
          return;
        }
        tuning.congestion = *s;
      }
    }
    if (const toml::node* node = table.get("keepalive")) {
      read_keepalive(*node, tuning);
    }
    if (const toml::node* node = table.get("user_timeout")) {
      tuning.user_timeout = as_duration(*node, "user_timeout", milliseconds(1), milliseconds(INT32_MAX));
    }
    if (const toml::node* node = table.get("notsent_lowat")) {
      if (auto v = as_size(*node, "notsent_lowat", 1, INT32_MAX)) {
        tuning.notsent_lowat = static_cast<std::uint32_t>(*v);
      }
    }
    if (const toml::node* node = table.get("thin_linear_timeouts")) {
      tuning.thin_linear_timeouts = as_bool(*node, "thin_linear_timeouts");
    }
    if (const toml::node* node = table.get("callsite")) {
      tuning.callsite = as_bool(*node, "callsite");
    }
    if (const toml::node* node = table.get("quickack")) {
      tuning.quickack = as_bool(*node, "quickack");
    }
    if (const toml::node* node = table.get("tos")) {
      read_tos(*node, tuning);
    }
    if (const toml::node* node = table.get("sockopt")) {
      read_sockopts(*node, tuning);
    }
    if (const toml::node* node = table.get("keep_warm")) {
      read_keep_warm(*node, tuning);
    }
  }

  void read_buffers(const toml::node& node, Tuning& tuning) {
    const toml::table* table = as_table(node, "buffers");
    static constexpr std::string_view kBufferKeys[] = {"bandwidth", "rtt", "sndbuf", "rcvbuf"};
    if (table == nullptr || !check_keys(*table, kBufferKeys, "buffers")) {
      return;
    }
    BufferSpec spec;
    constexpr std::uint64_t kMinBuffer = 1024;
    constexpr std::uint64_t kMaxBuffer = 1ULL << 30;
    if (const toml::node* bandwidth = table->get("bandwidth")) {
      const auto s = bandwidth->as_string();
      if (s == nullptr) {
        fail(bandwidth->source(), "'bandwidth' must be a rate such as \"1Gbit\", not " + describe(*bandwidth));
        return;
      }
      const Parsed<std::uint64_t> rate = parse_rate(s->get());
      if (!rate.ok()) {
        fail(bandwidth->source(), "'bandwidth': " + rate.error());
        return;
      }
      if (rate.value() == 0) {
        fail(bandwidth->source(), "'bandwidth' must be above zero");
        return;
      }
      spec.bandwidth_bytes_per_s = rate.value();
    }
    if (const toml::node* rtt = table->get("rtt")) {
      const auto s = rtt->as_string();
      if (s != nullptr && s->get() == "auto") {
        spec.rtt_auto = true;
      } else if (auto d = as_duration(*rtt, "rtt", std::chrono::microseconds(10), std::chrono::seconds(60))) {
        spec.rtt = *d;
      } else {
        return;
      }
    }
    if (const toml::node* sndbuf = table->get("sndbuf")) {
      spec.sndbuf = as_size(*sndbuf, "sndbuf", kMinBuffer, kMaxBuffer);
    }
    if (const toml::node* rcvbuf = table->get("rcvbuf")) {
      spec.rcvbuf = as_size(*rcvbuf, "rcvbuf", kMinBuffer, kMaxBuffer);
    }
    if (failed()) {
      return;
    }
    const bool has_rtt = spec.rtt.has_value() || spec.rtt_auto;
    if (spec.bandwidth_bytes_per_s.has_value() != has_rtt) {
      fail(node.source(), spec.bandwidth_bytes_per_s.has_value()
                              ? "'buffers' has 'bandwidth' without 'rtt' (a duration or \"auto\")"
                              : "'buffers' has 'rtt' without 'bandwidth'");
      return;
    }
    if (!spec.bandwidth_bytes_per_s.has_value() && !spec.sndbuf.has_value() && !spec.rcvbuf.has_value()) {
      fail(node.source(), "'buffers' needs 'bandwidth' and 'rtt', or 'sndbuf'/'rcvbuf'");
      return;
    }
    if (spec.bandwidth_bytes_per_s.has_value() && spec.rtt.has_value()) {
      // The value the shim would pass to setsockopt; it saturates at INT32_MAX instead of overflowing.
      const std::uint64_t bdp = bdp_target(*spec.bandwidth_bytes_per_s, *spec.rtt);
      if (bdp > kMaxBuffer) {
        const bool saturated = bdp == static_cast<std::uint64_t>(std::numeric_limits<std::int32_t>::max());
        fail(node.source(), "'buffers': bandwidth x rtt is " + std::string(saturated ? "more than " : "") +
                                format_size(bdp) + ", above the 1 GiB limit");
        return;
      }
    }
    tuning.buffers = spec;
  }

  void read_keepalive(const toml::node& node, Tuning& tuning) {
    const toml::table* table = as_table(node, "keepalive");
    static constexpr std::string_view kKeepaliveKeys[] = {"idle", "interval", "count"};
    if (table == nullptr || !check_keys(*table, kKeepaliveKeys, "keepalive")) {
      return;
    }
    Keepalive keepalive;
    const toml::node* idle = table->get("idle");
    if (idle == nullptr) {
      fail(node.source(), "'keepalive' needs 'idle' (a duration such as \"30s\")");
      return;
    }
    constexpr auto kMaxKeepalive = std::chrono::seconds(32767);  // the kernel's MAX_TCP_KEEPIDLE
    if (auto d = as_duration(*idle, "idle", std::chrono::seconds(1), kMaxKeepalive)) {
      keepalive.idle = *d;
    }
    if (const toml::node* interval = table->get("interval")) {
      if (auto d = as_duration(*interval, "interval", std::chrono::seconds(1), kMaxKeepalive)) {
        keepalive.interval = *d;
      }
    }
    if (const toml::node* count = table->get("count")) {
      if (auto c = as_int(*count, "count", 1, 127)) {
        keepalive.count = static_cast<int>(*c);
      }
    }
    if (!failed()) {
      tuning.keepalive = keepalive;
    }
  }

  // heartbeat = "\n" (a TOML string, escapes allowed) or heartbeat_hex = "0a" (binary): 1 to 64 bytes.
  bool read_heartbeat_bytes(const toml::node& node, std::string_view key, KeepWarm& keep_warm) {
    constexpr std::size_t kMaxPayload = 64;
    const std::string name(key);
    if (key == "heartbeat") {
      auto s = as_string(node, name);
      if (!s) {
        return false;
      }
      keep_warm.payload = std::move(*s);
    } else {
      const auto* s = node.as_string();
      if (s == nullptr) {
        fail(node.source(), "'heartbeat_hex' must be a string of hex digits such as \"0a\", not " + describe(node));
        return false;
      }
      const std::string& digits = s->get();
      auto nibble = [](char c) -> int {
        if (c >= '0' && c <= '9') {
          return c - '0';
        }
        if (c >= 'a' && c <= 'f') {
          return c - 'a' + 10;
        }
        if (c >= 'A' && c <= 'F') {
          return c - 'A' + 10;
        }
        return -1;
      };
      const auto bad = std::find_if(digits.begin(), digits.end(), [&](char c) { return nibble(c) < 0; });
      if (bad != digits.end()) {
        const auto c = static_cast<unsigned char>(*bad);
        const std::string shown =
            c < 0x20 || c >= 0x7f ? escape_for_display(std::string(1, *bad), true) : "'" + std::string(1, *bad) + "'";
        fail(node.source(), "'heartbeat_hex' has " + shown + " at offset " + std::to_string(bad - digits.begin()) +
                                ": only hex digits 0-9, a-f, A-F (no spaces or 0x prefix)");
        return false;
      }
      if (digits.size() % 2 != 0) {
        fail(node.source(), "'heartbeat_hex' has an odd number of hex digits (" + std::to_string(digits.size()) +
                                "); each byte takes two");
        return false;
      }
      for (std::size_t i = 0; i < digits.size(); i += 2) {
        keep_warm.payload.push_back(static_cast<char>(nibble(digits[i]) * 16 + nibble(digits[i + 1])));
      }
    }
    if (keep_warm.payload.empty()) {
      fail(node.source(), "'" + name + "' must not be empty (1 to 64 bytes)");
      return false;
    }
    if (keep_warm.payload.size() > kMaxPayload) {
      fail(node.source(), "'" + name + "' is " + std::to_string(keep_warm.payload.size()) + " bytes; at most " +
                              std::to_string(kMaxPayload));
      return false;
    }
    return true;
  }

  // protocol = "http1-client": a preset's bytes and the side that may send them.
  bool read_keep_warm_protocol(const toml::node& node, KeepWarm& keep_warm) {
    const auto name = as_string(node, "protocol");
    if (!name) {
      return false;
    }
    const KeepWarmPreset* preset = find_keep_warm_preset(*name);
    if (preset == nullptr) {
      return fail(node.source(), "unknown keep_warm protocol \"" + *name + "\"; known: " + keep_warm_preset_names());
    }
    keep_warm.protocol = preset->name;
    keep_warm.payload = preset->payload;
    keep_warm.side = preset->side;
    return true;
  }

  // keep_warm = { protocol = "http1-client" }, { heartbeat = "\n" } or { heartbeat_hex = "0a" },
  // interval = "auto" or 10ms..1h, max_idle = 1s..24h.
  void read_keep_warm(const toml::node& node, Tuning& tuning) {
    const toml::table* table = as_table(node, "keep_warm");
    static constexpr std::string_view kKeepWarmKeys[] = {"protocol", "heartbeat", "heartbeat_hex", "interval",
                                                         "max_idle"};
    if (table == nullptr || !check_keys(*table, kKeepWarmKeys, "keep_warm")) {
      return;
    }
    KeepWarm keep_warm;
    // Exactly one says what the heartbeat is; the second one written is the mistake.
    std::vector<std::pair<std::string_view, const toml::node*>> given;
    for (const std::string_view key : {"protocol", "heartbeat", "heartbeat_hex"}) {
      if (const toml::node* value = table->get(key)) {
        given.emplace_back(key, value);
      }
    }
    if (given.empty()) {
      fail(node.source(), "'keep_warm' needs 'protocol' (one of " + keep_warm_preset_names() +
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
      fail(given[1].second->source(), "'keep_warm' has both '" + std::string(given[0].first) + "' and '" +
                                          std::string(given[1].first) + "'; give one");
      return;
    }
    const auto [first_key, first] = given.front();
    if (first_key == "protocol") {
      if (!read_keep_warm_protocol(*first, keep_warm)) {
        return;
      }
    } else if (!read_heartbeat_bytes(*first, first_key, keep_warm)) {
      return;
    }
    if (const toml::node* interval = table->get("interval")) {
      const auto s = interval->as_string();
      if (s == nullptr) {
        fail(interval->source(),
             "'interval' must be \"auto\" or a duration such as \"150ms\", not " + describe(*interval));
        return;
      }
      if (s->get() != "auto") {
        if (auto d = as_duration(*interval, "interval", std::chrono::milliseconds(10), std::chrono::hours(1))) {
          keep_warm.interval = *d;
        } else {
          return;
        }
      }
    }
    if (const toml::node* max_idle = table->get("max_idle")) {
      if (auto d = as_duration(*max_idle, "max_idle", std::chrono::seconds(1), std::chrono::hours(24))) {
        keep_warm.max_idle = *d;
      } else {
        return;
      }
    }
    tuning.keep_warm = std::move(keep_warm);
  }

  void read_tos(const toml::node& node, Tuning& tuning) {
    long value = -1;
    if (const auto* i = node.as_integer()) {
      value = static_cast<long>(i->get());
    } else if (const auto* s = node.as_string()) {
      char* end = nullptr;
      value = std::strtol(s->get().c_str(), &end, 0);
      if (s->get().empty() || *end != '\0') {
        value = -1;
      }
    }
    if (value < 0 || value > 255) {
      fail(node.source(), "'tos' must be 0..255 (a number or a string such as \"0x10\"), not " + describe(node));
      return;
    }
    tuning.tos = static_cast<int>(value);
  }

  void read_sockopts(const toml::node& node, Tuning& tuning) {
    const toml::array* array = node.as_array();
    if (array == nullptr) {
      fail(node.source(),
           "'sockopt' must be an array of tables such as [{ level = \"IPPROTO_TCP\", name = \"TCP_MAXSEG\", value = "
           "1400 }]");
      return;
    }
    static constexpr std::string_view kSockoptKeys[] = {"level", "name", "value"};
    for (const toml::node& item : *array) {
      const toml::table* table = as_table(item, "sockopt entry");
      if (table == nullptr || !check_keys(*table, kSockoptKeys, "sockopt")) {
        return;
      }
      const toml::node* level = table->get("level");
      const toml::node* name = table->get("name");
      const toml::node* value = table->get("value");
      if (level == nullptr || name == nullptr || value == nullptr) {
        fail(item.source(), "a 'sockopt' entry needs 'level', 'name' and 'value'");
        return;
      }
      RawSockopt opt;
      const auto level_text = as_string(*level, "level");
      const auto name_text = as_string(*name, "name");
      const auto number = as_int(*value, "value", INT32_MIN, INT32_MAX);
      if (!level_text || !name_text || !number) {
        return;
      }
      const auto* known_level =
          std::find_if(std::begin(kLevels), std::end(kLevels), [&](const auto& l) { return l.first == *level_text; });
      if (known_level == std::end(kLevels)) {
        std::vector<std::string_view> names;
        for (const auto& l : kLevels) {
          names.push_back(l.first);
        }
        fail(level->source(), "unknown sockopt level \"" + *level_text +
                                  "\" (SOL_SOCKET, IPPROTO_TCP, IPPROTO_IP, IPPROTO_IPV6)" +
                                  did_you_mean(*level_text, names));
        return;
      }
      const auto* known = std::find_if(std::begin(kSockopts), std::end(kSockopts),
                                       [&](const NamedOption& o) { return o.name == *name_text; });
      if (known == std::end(kSockopts)) {
        std::vector<std::string_view> names;
        for (const auto& o : kSockopts) {
          names.push_back(o.name);
        }
        fail(name->source(), "unknown socket option \"" + *name_text + "\"" + did_you_mean(*name_text, names));
        return;
      }
      if (known->level != known_level->second) {
        fail(level->source(), std::string(known->name) + " belongs to level " +
                                  std::string(std::find_if(std::begin(kLevels), std::end(kLevels),
                                                           [&](const auto& l) { return l.second == known->level; })
                                                  ->first) +
                                  ", not " + *level_text);
        return;
      }
      opt.level = known->level;
      opt.name = known->option;
      opt.value = static_cast<int>(*number);
      opt.level_name = *level_text;
      opt.option_name = *name_text;
      tuning.sockopts.push_back(opt);
    }
  }

  std::string source_;
  std::optional<PolicyError> error_;
};

}  // namespace

LoadResult load_policy_text(std::string_view toml_text, const std::string& source_name) {
  // Before toml++ sees it: some malformed text makes toml++ 3.3 abort or run into undefined behaviour.
  if (const auto problem = find_toml_input_problem(toml_text)) {
    const PolicyError error{SourcePos{source_name, problem->line, problem->column}, problem->message};
    return LoadResult{std::variant<Policy, PolicyError>(std::in_place_index<1>, error)};
  }
  return Loader(source_name).load(toml_text);
}

namespace {

LoadResult file_error(const std::string& source, std::string message) {
  return LoadResult{std::variant<Policy, PolicyError>(std::in_place_index<1>,
                                                      PolicyError{SourcePos{source, 0, 0}, std::move(message)})};
}

// `bytes` unset: read up to the bound without reaching the end (the file grew, or says st_size 0).
std::string too_large(std::optional<std::size_t> bytes) {
  static_assert(kMaxPolicyBytes == std::size_t{1} << 20, "the message says 1 MiB");
  return (bytes.has_value() ? std::to_string(*bytes) + " bytes, " : std::string()) +
         "more than the 1 MiB a policy may have";
}

// strerror's text without its buffer: the shim loads the policy inside the app, whose threads may use it.
std::string errno_text(int error) {
  return std::generic_category().message(error);
}

// Closes the descriptor on every path out of load_policy_file.
struct FdCloser {
  int fd;
  explicit FdCloser(int descriptor) : fd(descriptor) {}
  FdCloser(const FdCloser&) = delete;
  FdCloser& operator=(const FdCloser&) = delete;
  ~FdCloser() { (void)::close(fd); }
};

}  // namespace

LoadResult load_policy_file(const std::string& path) {
  // The stat first only spares a device the side effects of an open (a tape rewinds, a watchdog
  // arms); the fstat on the opened descriptor below is what decides, whatever was swapped in.
  struct stat before {};
  if (::stat(path.c_str(), &before) == 0 && !S_ISREG(before.st_mode)) {
    return file_error(path, not_a_regular_file(before.st_mode));
  }
  // O_NONBLOCK: opening a FIFO would wait for a writer, before the app's main. O_NOCTTY: a
  // terminal named here must not become a daemon's controlling terminal.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) {
    return file_error(path, "cannot read: " + errno_text(errno));
  }
  const FdCloser closer{fd};
  struct stat info {};
  if (::fstat(fd, &info) != 0) {
    return file_error(path, "cannot read: " + errno_text(errno));
  }
  if (!S_ISREG(info.st_mode)) {
    return file_error(path, not_a_regular_file(info.st_mode));
  }
  if (static_cast<std::uint64_t>(info.st_size) > kMaxPolicyBytes) {
    return file_error(path, too_large(static_cast<std::size_t>(info.st_size)));
  }
  // Read to the end rather than st_size bytes (a /proc file says 0, a file may grow meanwhile),
  // but never past the bound: one byte more than it is enough to know the file is too large.
  std::string text(kMaxPolicyBytes + 1, '\0');
  std::size_t length = 0;
  while (length < text.size()) {
    const ssize_t got = ::read(fd, text.data() + length, text.size() - length);
    if (got < 0 && errno == EINTR) {
      continue;
    }
    if (got < 0) {
      return file_error(path, "cannot read: " + errno_text(errno));
    }
    if (got == 0) {
      break;
    }
    length += static_cast<std::size_t>(got);
  }
  if (length > kMaxPolicyBytes) {
    return file_error(path, too_large(std::nullopt));
  }
  text.resize(length);
  return load_policy_text(text, path);
}

PolicySource discover_policy_source(bool secure_execution, const char* system_path) {
  if (!secure_execution) {
    if (const char* path = std::getenv("TCPTUNE_POLICY"); path != nullptr && *path != '\0') {
      return {PolicySource::Kind::env_path, path};
    }
    if (const char* inline_text = std::getenv("TCPTUNE_POLICY_TOML"); inline_text != nullptr && *inline_text != '\0') {
      return {PolicySource::Kind::env_inline, inline_text};
    }
  }
  // Whether it is there and readable, without opening it: opening a FIFO would block.
  if (system_path != nullptr && ::faccessat(AT_FDCWD, system_path, R_OK, AT_EACCESS) == 0) {
    return {PolicySource::Kind::system_file, system_path};
  }
  return {PolicySource::Kind::builtin, {}};
}

LoadResult load_discovered(const PolicySource& source) {
  switch (source.kind) {
    case PolicySource::Kind::env_path:
    case PolicySource::Kind::system_file: return load_policy_file(source.path_or_text);
    case PolicySource::Kind::env_inline:
      if (source.path_or_text.size() > kMaxPolicyBytes) {
        return file_error("TCPTUNE_POLICY_TOML", too_large(source.path_or_text.size()));
      }
      return load_policy_text(source.path_or_text, "TCPTUNE_POLICY_TOML");
    case PolicySource::Kind::builtin: break;
  }
  return LoadResult{std::variant<Policy, PolicyError>(std::in_place_index<0>, builtin_default_policy())};
}

}  // namespace tcptune::config
