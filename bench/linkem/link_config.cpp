#include "link_config.hpp"

#include <map>
#include <vector>

#include "units.hpp"

namespace tcptune::linkem {

namespace {

// "--name value" or "--name=value": one option of the command line.
struct Option {
  std::string name;  // without the leading "--"
  std::string_view value;
};

// Splits 'args' into options, each taking exactly one value. 'error' names the offending argument.
bool split_options(std::span<const std::string_view> args, std::vector<Option>& options, std::string& error) {
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string_view arg = args[i];
    if (arg.size() < 3 || arg.substr(0, 2) != "--") {
      error = "unexpected argument \"" + std::string(arg) + "\"";
      return false;
    }
    const std::size_t equals = arg.find('=');
    if (equals != std::string_view::npos) {
      options.push_back({std::string(arg.substr(2, equals - 2)), arg.substr(equals + 1)});
      continue;
    }
    if (i + 1 >= args.size()) {
      error = std::string(arg) + " needs a value";
      return false;
    }
    options.push_back({std::string(arg.substr(2)), args[++i]});
  }
  return true;
}

// Applies one per-direction setting ("delay", "rate", ...) to 'params'. 'known' tells a bad value of a known
// field from a field that does not exist.
bool apply_direction_field(std::string_view field, std::string_view value, LinkParams& params, bool& known,
                           std::string& error) {
  known = true;
  if (field == "delay" || field == "jitter") {
    const auto ns = parse_duration_ns(value, error);
    if (!ns) {
      return false;
    }
    (field == "delay" ? params.delay_ns : params.jitter_ns) = *ns;
    return true;
  }
  if (field == "rate") {
    const auto bps = parse_rate_bps(value, error);
    if (!bps) {
      return false;
    }
    params.rate_bps = *bps;
    return true;
  }
  if (field == "queue") {
    const auto packets = parse_count(value, 1000000, error);
    if (!packets) {
      return false;
    }
    if (*packets == 0) {
      error = "the queue must hold at least 1 packet";
      return false;
    }
    params.queue_packets = static_cast<std::uint32_t>(*packets);
    return true;
  }
  if (field == "loss") {
    const auto pct = parse_percent(value, error);
    if (!pct) {
      return false;
    }
    params.loss_pct = *pct;
    return true;
  }
  known = false;
  return false;
}

bool parse_sysctl_option(const Option& option, SysctlChange& change, bool& known, std::string& error) {
  known = true;
  if (option.name == "congestion") {
    if (!valid_congestion_name(option.value)) {
      error = "--congestion: \"" + std::string(option.value) + "\" is not a congestion control name";
      return false;
    }
    change.congestion = std::string(option.value);
    return true;
  }
  if (option.name == "slow-start-after-idle") {
    if (option.value != "0" && option.value != "1") {
      error = "--slow-start-after-idle takes 0 or 1";
      return false;
    }
    change.slow_start_after_idle = option.value == "1" ? 1 : 0;
    return true;
  }
  known = false;
  return false;
}

}  // namespace

std::string_view backend_name(Backend backend) {
  switch (backend) {
    case Backend::kAuto: return "auto";
    case Backend::kTun: return "tun";
    case Backend::kNetem: return "netem";
  }
  return "?";
}

bool valid_congestion_name(std::string_view name) {
  if (name.empty() || name.size() > 15) {
    return false;
  }
  for (const char c : name) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-')) {
      return false;
    }
  }
  return true;
}

bool parse_link_options(std::span<const std::string_view> args, LinkConfig& config, std::string& error) {
  std::vector<Option> options;
  if (!split_options(args, options, error)) {
    return false;
  }
  std::map<std::string, int> seen;
  for (const Option& option : options) {
    if (seen[option.name]++ > 0) {
      error = "--" + option.name + " given twice";
      return false;
    }
  }
  if (seen.count("rtt") != 0 && seen.count("delay") != 0) {
    error = "--rtt and --delay both set the one-way delay; give one of them";
    return false;
  }
  // Options for both directions first, then the --ab-/--ba- overrides, whatever their order on the line.
  std::vector<const Option*> overrides;
  SysctlChange sysctls;
  for (const Option& option : options) {
    bool known = false;
    if (option.name.starts_with("ab-") || option.name.starts_with("ba-")) {
      overrides.push_back(&option);
      continue;
    }
    if (option.name == "rtt") {
      const auto ns = parse_duration_ns(option.value, error);
      if (!ns) {
        error.insert(0, "--rtt: ");
        return false;
      }
      config.a_to_b.delay_ns = *ns / 2;
      config.b_to_a.delay_ns = *ns - *ns / 2;
      continue;
    }
    if (option.name == "seed") {
      const auto seed = parse_count(option.value, UINT64_MAX, error);
      if (!seed) {
        error.insert(0, "--seed: ");
        return false;
      }
      config.seed = *seed;
      config.seed_given = true;
      continue;
    }
    if (option.name == "backend") {
      if (option.value == "auto") {
        config.backend = Backend::kAuto;
      } else if (option.value == "tun") {
        config.backend = Backend::kTun;
      } else if (option.value == "netem") {
        config.backend = Backend::kNetem;
      } else {
        error = "--backend takes auto, tun or netem";
        return false;
      }
      continue;
    }
    if (option.name == "congestion" || option.name == "slow-start-after-idle") {
      if (!parse_sysctl_option(option, sysctls, known, error)) {
        return false;
      }
      continue;
    }
    if (apply_direction_field(option.name, option.value, config.a_to_b, known, error)) {
      apply_direction_field(option.name, option.value, config.b_to_a, known, error);
      continue;
    }
    error = known ? ("--" + option.name).append(": ").append(error) : "unknown option --" + option.name;
    return false;
  }
  for (const Option* option : overrides) {
    LinkParams& params = option->name.starts_with("ab-") ? config.a_to_b : config.b_to_a;
    bool known = false;
    if (!apply_direction_field(std::string_view(option->name).substr(3), option->value, params, known, error)) {
      error = known ? ("--" + option->name).append(": ").append(error) : "unknown option --" + option->name;
      return false;
    }
  }
  if (sysctls.congestion) {
    config.sysctls.congestion = *sysctls.congestion;
  }
  if (sysctls.slow_start_after_idle) {
    config.sysctls.slow_start_after_idle = *sysctls.slow_start_after_idle;
  }
  return true;
}

bool parse_set_options(std::span<const std::string_view> args, SysctlChange& change, std::string& error) {
  std::vector<Option> options;
  if (!split_options(args, options, error)) {
    return false;
  }
  for (const Option& option : options) {
    bool known = false;
    if (!parse_sysctl_option(option, change, known, error)) {
      if (!known) {
        error = "set takes only --congestion and --slow-start-after-idle (not --" + option.name + ")";
      }
      return false;
    }
  }
  if (!change.congestion && !change.slow_start_after_idle) {
    error = "set needs --congestion NAME and/or --slow-start-after-idle 0|1";
    return false;
  }
  return true;
}

}  // namespace tcptune::linkem
