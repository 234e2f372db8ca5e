// TOML policy loader: the walk over the document's tables. Keys (see docs/policy.md):
//   version = 1
//   [defaults] and every [[rule]]: the tuning keys of tuning_keys.cpp's table
//   [[rule]] also: name, match {peer, port, role, program}
//   [log]: its keys
// (the keys outside the tuning table are listed in policy_keys.cpp)
// Every error names FILE:LINE:COLUMN of the offending key or value; the values themselves are
// checked by value_parsers.cpp. The walk goes on past a mistake to report every one in a pass:
// a reader gives up only on the value it is reading, and a rule with a mistake is left out of
// the checks that need the whole rule (duplicate names aside).
#include "tcptune/config/policy_loader.hpp"

#include <toml++/toml.h>

#include <algorithm>
#include <optional>
#include <set>
#include <system_error>
#include <utility>
#include <vector>

#include "key_places.hpp"
#include "tcptune/config/cidr.hpp"
#include "tcptune/config/escape.hpp"
#include "tcptune/config/private_stack.hpp"
#include "tcptune/config/toml_input_guard.hpp"
#include "tcptune/config/tuning_keys.hpp"
#include "tcptune/config/value_parsers.hpp"
#include "toml_walk.hpp"

namespace tcptune::config {

std::string PolicyError::to_string() const {
  std::string out = pos.file;
  if (pos.line != 0) {
    out += ":" + std::to_string(pos.line) + ":" + std::to_string(pos.column);
  }
  return out + ": " + message;
}

namespace {

// The keys of [defaults]: the tuning keys; a [[rule]] has its name and match too.
std::vector<std::string_view> allowed_keys(std::span<const std::string_view> own) {
  std::vector<std::string_view> keys(own.begin(), own.end());
  for (const TuningKey& key : tuning_keys()) {
    keys.push_back(key.name);
  }
  return keys;
}

bool earlier(const PolicyError& a, const PolicyError& b) {
  return a.pos.line != b.pos.line ? a.pos.line < b.pos.line : a.pos.column < b.pos.column;
}

class Loader {
 public:
  explicit Loader(std::string source) : walk_(std::move(source)) {}

  LoadResult load(std::string_view text) {
    toml::parse_result parsed = toml::parse(text, walk_.source());
    if (!parsed) {
      const auto& error = parsed.error();
      // escaped: toml++ quotes what it saw raw ("saw 't\n'"), and the error must stay one line
      PolicyError e{walk_.position(error.source()),
                    escape_for_display("invalid TOML: " + std::string(error.description()), false)};
      return LoadResult{std::variant<Policy, PolicyError>(std::in_place_index<1>, e)};
    }
    Policy policy;
    policy.source = walk_.source();
    read_top(parsed.table(), policy);
    if (walk_.failed()) {
      // In the file's order: the first line is the one a single-line report (the shim's) shows.
      std::vector<PolicyError> errors = walk_.errors();
      std::stable_sort(errors.begin(), errors.end(), earlier);
      LoadResult failed{std::variant<Policy, PolicyError>(std::in_place_index<1>, errors.front())};
      failed.errors = std::move(errors);
      return failed;
    }
    for (Rule& rule : policy.rules) {
      rule.effective = overlay(policy.defaults, rule.tuning);
    }
    LoadResult loaded{std::variant<Policy, PolicyError>(std::in_place_index<0>, std::move(policy))};
    loaded.notes = walk_.notes();
    std::stable_sort(loaded.notes.begin(), loaded.notes.end(), earlier);
    return loaded;
  }

 private:
  void read_top(const toml::table& top, Policy& policy) {
    walk_.check_keys(top, kTopKeys, "the policy");
    if (const toml::node* version = top.get("version")) {
      if (const auto v = walk_.take(*version, parse_version(policy_value(*version)))) {
        policy.version = *v;
      }
    }
    if (const toml::node* defaults = top.get("defaults")) {
      static const std::vector<std::string_view> defaults_keys = allowed_keys({});
      if (const toml::table* table = walk_.as_table(*defaults, "defaults")) {
        walk_.check_keys(*table, defaults_keys, "[defaults]");
        read_tuning(*table, policy.defaults);
      }
    }
    if (const toml::node* log = top.get("log")) {
      read_log(*log, policy.log);
    }
    if (const toml::node* rules = top.get("rule")) {
      const toml::array* array = rules->as_array();
      if (array == nullptr) {
        walk_.fail(rules->source(), "'rule' must be an array of tables: write [[rule]]");
        return;
      }
      std::set<std::string> names;
      std::size_t count = 0;
      for (const toml::node& node : *array) {
        if (++count > kMaxRules) {
          walk_.fail(node.source(), "more than " + std::to_string(kMaxRules) + " rules: this is rule " +
                                        std::to_string(kMaxRules + 1) +
                                        ", past the limit; merge rules that tune alike (match takes lists of peers, "
                                        "ports and programs)");
          return;
        }
        const toml::table* table = walk_.as_table(node, "rule");
        if (table == nullptr) {
          continue;
        }
        const std::size_t mark = walk_.mark();
        Rule rule;
        rule.pos = walk_.position(node.source());
        rule.name = "rule " + std::to_string(count);
        read_rule(*table, rule);
        if (!names.insert(rule.name).second) {
          walk_.fail(table->get("name") != nullptr ? table->get("name")->source() : node.source(),
                     "duplicate rule name \"" + rule.name + "\"");
        }
        if (!walk_.failed_since(mark)) {
          policy.rules.push_back(std::move(rule));
        }
      }
    }
  }

  void read_log(const toml::node& node, LogSettings& log) {
    const toml::table* table = walk_.as_table(node, "log");
    if (table == nullptr) {
      return;
    }
    walk_.check_keys(*table, kLogKeys, "[log]");
    // Each key's value, or nothing after reporting why at it.
    auto read = [&](std::string_view key, auto parse) {
      const toml::node* value = table->get(key);
      return value != nullptr ? walk_.take(*value, parse(policy_value(*value))) : std::nullopt;
    };
    using std::chrono::hours;
    if (auto path = read("path", [](const PolicyValue& v) { return parse_string(v, "path"); })) {
      log.path = *path;
    }
    if (auto textfile =
            read("prometheus_textfile", [](const PolicyValue& v) { return parse_string(v, "prometheus_textfile"); })) {
      log.prometheus_textfile = *textfile;
    }
    if (table->get("slow_write") != nullptr) {
      log.slow_write = read("slow_write", [](const PolicyValue& v) {
        return parse_duration_value(v, "slow_write", std::chrono::microseconds(1), hours(1));
      });
    }
    if (const toml::node* rotate_size = table->get("rotate_size")) {
      walk_.note_size_reading(*rotate_size);
    }
    if (auto size = read("rotate_size", [](const PolicyValue& v) {
          return parse_size_value(v, "rotate_size", 4096, std::uint64_t{1} << 40);
        })) {
      log.rotate_size = *size;
    }
    if (auto keep = read("keep", parse_log_keep)) {
      log.keep = *keep;
    }
    if (auto summary = read("summary", [](const PolicyValue& v) { return parse_bool(v, "summary"); })) {
      log.summary = *summary;
    }
    if (auto callsite = read("callsite", [](const PolicyValue& v) { return parse_bool(v, "callsite"); })) {
      log.callsite = *callsite;
    }
    if (auto trace = read("trace_writes", [](const PolicyValue& v) { return parse_bool(v, "trace_writes"); })) {
      log.trace_writes = *trace;
    }
    if (auto interval = read("interval", [](const PolicyValue& v) {
          return parse_duration_value(v, "interval", std::chrono::milliseconds(100), hours(1));
        })) {
      log.interval = *interval;
    }
    if (auto format = read("format", parse_log_format)) {
      log.format = *format;
    }
    if (auto level = read("level", parse_log_level)) {
      log.level = *level;
    }
  }

  void read_rule(const toml::table& table, Rule& rule) {
    static const std::vector<std::string_view> rule_keys = allowed_keys(kRuleOwnKeys);
    const std::size_t mark = walk_.mark();
    walk_.check_keys(table, rule_keys, "[[rule]]");
    if (const toml::node* name = table.get("name")) {
      if (auto s = walk_.take(*name, parse_rule_name(policy_value(*name)))) {
        rule.name = *s;
      }
    }
    if (const toml::node* match = table.get("match")) {
      read_match(*match, rule.match);
    }
    read_tuning(table, rule.tuning);
    if (!walk_.failed_since(mark)) {
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
    walk_.fail(protocol->source(), "keep_warm protocol \"" + keep_warm->protocol + "\" is only valid from the " +
                                       (from_client ? "client" : "server") + ", and this rule matches only " +
                                       (from_client ? "accepted (server-side) sockets (role = \"server\")"
                                                    : "connections the program opens (role = \"client\")") +
                                       ", so it would never send a heartbeat; match role \"" +
                                       (from_client ? "client" : "server") + "\" or \"any\"");
  }

  void read_match(const toml::node& node, Match& match) {
    const toml::table* table = walk_.as_table(node, "match");
    if (table == nullptr) {
      return;
    }
    walk_.check_keys(*table, kMatchKeys, "match");
    if (const toml::node* peer = table->get("peer")) {
      for (const auto& [text, item] : walk_.string_list(*peer, "peer")) {
        const Parsed<Cidr> cidr = parse_cidr(text);
        if (!cidr.ok()) {
          walk_.fail(item->source(), "'peer': " + cidr.error());
          continue;
        }
        match.peers.push_back(cidr.value());
      }
    }
    if (const toml::node* port = table->get("port")) {
      read_ports(*port, match.ports);
    }
    if (const toml::node* role = table->get("role")) {
      if (auto r = walk_.take(*role, parse_role(policy_value(*role)))) {
        match.role = *r;
      }
    }
    if (const toml::node* program = table->get("program")) {
      for (const auto& entry : walk_.string_list(*program, "program")) {
        match.programs.push_back(entry.first);
      }
    }
  }

  // A port, a "first-last" range, or an array of those.
  void read_ports(const toml::node& node, std::vector<PortRange>& ports) {
    auto one = [&](const toml::node& item) {
      if (auto range = walk_.take(item, parse_port(policy_value(item)))) {
        ports.push_back(*range);
      }
    };
    if (const auto* array = node.as_array()) {
      for (const toml::node& item : *array) {
        one(item);
      }
    } else {
      one(node);
    }
  }

  // Every key of the table of tuning keys that `table` sets, in the table's order.
  void read_tuning(const toml::table& table, Tuning& tuning) {
    for (const TuningKey& key : tuning_keys()) {
      if (const toml::node* node = table.get(key.name)) {
        key.read(walk_, key.name, TomlNode{*node}, tuning);
      }
    }
  }

  TomlWalk walk_;
};

LoadResult load_on_this_stack(std::string_view toml_text, const std::string& source_name) {
  // Before toml++ sees it: some malformed text makes toml++ 3.3 abort or run into undefined
  // behaviour, and deep nesting would run its recursion past any stack.
  if (const auto problem = find_toml_input_problem(toml_text)) {
    const PolicyError error{SourcePos{source_name, problem->line, problem->column}, problem->message};
    return LoadResult{std::variant<Policy, PolicyError>(std::in_place_index<1>, error)};
  }
  return Loader(source_name).load(toml_text);
}

}  // namespace

LoadResult load_policy_text(std::string_view toml_text, const std::string& source_name, std::size_t* stack_used) {
  std::optional<LoadResult> loaded;
  auto load = [&] { loaded.emplace(load_on_this_stack(toml_text, source_name)); };
  if (const int error = run_on_private_stack(kPolicyStackBytes, load, stack_used); error != 0) {
    static_assert(kPolicyStackBytes == std::size_t{1} << 20, "the message says 1 MiB");
    const PolicyError failure{SourcePos{source_name, 0, 0}, "cannot map the 1 MiB stack the policy is parsed on: " +
                                                                std::generic_category().message(error)};
    return LoadResult{std::variant<Policy, PolicyError>(std::in_place_index<1>, failure)};
  }
  return std::move(*loaded);
}

}  // namespace tcptune::config
