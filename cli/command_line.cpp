#include "command_line.hpp"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <array>
#include <charconv>
#include <chrono>
#include <regex>
#include <string_view>

#include "preset_search.hpp"
#include "tcptune/config/arm_label.hpp"
#include "tcptune/config/units.hpp"

namespace tcptune::cli {

namespace {

struct SubcommandName {
  std::string_view name;
  Subcommand subcommand;
};
constexpr std::array<SubcommandName, 10> kSubcommands{{{"run", Subcommand::run},
                                                       {"check", Subcommand::check},
                                                       {"doctor", Subcommand::doctor},
                                                       {"report", Subcommand::report},
                                                       {"advise", Subcommand::advise},
                                                       {"ab", Subcommand::ab},
                                                       {"kube-inject", Subcommand::kube_inject},
                                                       {"install", Subcommand::install},
                                                       {"enable", Subcommand::enable},
                                                       {"disable", Subcommand::disable}}};

// "3x", "1e3" and " 3" are no run count: the whole text must be the number.
CLI::Validator whole_number(int low, int high) {
  const std::string range = std::to_string(low) + " to " + std::to_string(high);
  return {[low, high, range](const std::string& text) -> std::string {
            int value = 0;
            const char* end = text.data() + text.size();
            const auto [stop, error] = std::from_chars(text.data(), end, value);
            if (text.empty() || error != std::errc() || stop != end || value < low || value > high) {
              return "'" + text + "' is not a whole number from " + range;
            }
            return {};
          },
          "INT in " + range};
}

// --preset NAME: the preset's file in the presets directory beside this tcptune, which then
// stands where --policy FILE (check: FILE) would. The help lists the names there, read only when
// the help is printed.
class PresetFile : public CLI::Validator {
 public:
  PresetFile() {
    func_ = [](std::string& name) -> std::string {
      PresetLookup found = find_preset(installed_presets_directory(), name);
      if (found.path.empty()) {
        return found.problem;
      }
      name = std::move(found.path);
      return {};
    };
    desc_function_ = [] {
      std::string names;
      for (const std::string& name : preset_names(installed_presets_directory())) {
        names += (names.empty() ? "{" : ",") + name;
      }
      return names.empty() ? names : names + "}";
    };
  }
};

CLI::Option* add_preset(CLI::App& command, std::string& policy, const std::string& instead) {
  return command
      .add_option("--preset", policy,
                  "a policy installed with tcptune, by name, " + instead + " (PREFIX/share/tcptune/presets/NAME.toml)")
      ->type_name("NAME")
      ->transform(PresetFile());
}

// CMD ARGS... after the options: the first positional, or "--", ends option parsing, so the
// program's own options are never taken for tcptune's.
CLI::Option* add_program(CLI::App& command, std::vector<std::string>& program) {
  command.positionals_at_end();
  command.footer("CMD and its arguments follow the options, after --: tcptune " + command.get_name() +
                 " [OPTIONS] -- CMD ARGS...");
  return command.add_option("CMD", program, "the program and its arguments (after --)")->required();
}

void add_run(CLI::App& app, RunOptions& run) {
  CLI::App* command =
      app.add_subcommand("run", "run CMD with libtcptune.so preloaded; a jsonl log and a summary by default");
  CLI::Option* policy = command->add_option("--policy", run.policy, "policy file (validated first; exit 78 if invalid)")
                            ->option_text("FILE");
  add_preset(*command, run.policy, "instead of --policy FILE")->excludes(policy);
  CLI::Option* observe = command->add_flag(
      "--observe", run.observe,
      "measure every connection and change nothing: no socket option is set (the observe-only policy, the first "
      "arm of tcptune ab); with --policy or --preset, only that policy's [log] is used (its log and Prometheus "
      "textfile), as the off arm of a fleet A/B");
  command
      ->add_option("--arm", run.arm,
                   "TCPTUNE_ARM=NAME for every process: arm=\"NAME\" on every series of the Prometheus textfile and "
                   "\"arm\" in every record, for tcptune ab --prometheus")
      ->option_text("NAME")
      ->check(CLI::Validator([](const std::string& name) { return config::arm_name_problem(name); }, "NAME"));
  command
      ->add_option("--log", run.log,
                   "log file, or 'stderr' for each process's own standard error (default: TCPTUNE_LOG, else the "
                   "policy's [log] path, else CMD-TIME-PID.jsonl in $XDG_STATE_HOME/tcptune, /var/log/tcptune for "
                   "root, ~/.local/state/tcptune for others; the path is printed after the program)")
      ->option_text("FILE");
  command->add_flag("--no-log", run.no_log, "no log at all (not the policy's [log] path either) and no summary")
      ->excludes(observe);
  command->add_flag("-q,--quiet", run.quiet, "a log, but nothing on stderr after the program (no summary, no path)");
  command->add_flag("-v,--verbose", run.verbose, "the shim logs at debug level");
  command->add_flag("--supervise", run.supervise,
                    "tune from outside through seccomp user notification, as for static and Go programs");
  add_program(*command, run.command);
}

void add_check(CLI::App& app, CheckOptions& check) {
  CLI::App* command = app.add_subcommand("check", "validate a policy and explain it for this host");
  CLI::Option* file = command->add_option("FILE", check.policy_file,
                                          "the policy file (none: the built-in default, used without a policy)");
  add_preset(*command, check.policy_file, "instead of FILE")->excludes(file);
  command
      ->add_option("--as-user", check.as_user,
                   "the plan as a process of USER gets it (a name in /etc/passwd or a uid): root may pin buffers "
                   "above net.core.rmem_max/wmem_max, others may not")
      ->option_text("USER")
      ->check(CLI::Validator(
          [](const std::string& user) { return user.empty() ? std::string("a user name or uid, not empty") : ""; },
          "USER"));
}

void add_report(CLI::App& app, ReportOptions& report) {
  CLI::App* command = app.add_subcommand("report", "connections, latency and slow call sites from jsonl logs");
  command->add_option("LOG", report.logs, "jsonl logs written by the shim")->required();
  command->add_option("--by", report.by, "group by (default: rule)")
      ->check(CLI::IsMember({"rule", "peer", "program", "callsite"}));
  command->add_flag("--json", report.json, "one JSON object on stdout");
}

void add_advise(CLI::App& app, AdviseOptions& advise) {
  CLI::App* command = app.add_subcommand(
      "advise", "what TCP costs the programs that wrote these jsonl logs, why, and the rules that fix it");
  command
      ->add_option("LOG", advise.logs, "jsonl logs written by the shim (both ends of a connection when you have them)")
      ->required();
  command
      ->add_option("-o,--output", advise.output,
                   "write the advised policy to FILE (nothing written when there is nothing to change)")
      ->option_text("FILE");
  command->add_flag("--json", advise.json, "one JSON object on stdout: {\"findings\": [...]}");
  command
      ->add_option("--heartbeat", advise.heartbeat,
                   "bytes the peers' protocol skips between messages (e.g. $'\\n' for a line protocol like STOMP's): "
                   "slow start after idle then gets keep_warm = { heartbeat = BYTES } where no protocol preset fits "
                   "the port")
      ->option_text("BYTES")
      ->check(CLI::Validator(
          [](const std::string& bytes) {
            return bytes.empty() || bytes.size() > 64 ? std::string("1 to 64 bytes, as keep_warm's heartbeat")
                                                      : std::string();
          },
          "BYTES"));
}

// A duration as the policy writes them ("10m", "30s", "1h"), from `low` seconds.
CLI::Validator duration_from(double low) {
  return {[low](const std::string& text) -> std::string {
            const config::Parsed<config::Duration> parsed = config::parse_duration(text);
            if (!parsed.ok()) {
              return parsed.error();
            }
            if (std::chrono::duration<double>(parsed.value()).count() < low) {
              return "'" + text + "' is shorter than " + std::to_string(static_cast<int>(low)) + " s";
            }
            return {};
          },
          "DURATION"};
}

// A PromQL label name.
CLI::Validator label_name() {
  return {[](const std::string& text) -> std::string {
            if (!std::regex_match(text, std::regex("[a-zA-Z_][a-zA-Z0-9_]*"))) {
              return "'" + text + "' is not a Prometheus label name";
            }
            return {};
          },
          "LABEL"};
}

void add_ab(CLI::App& app, AbOptions& ab) {
  CLI::App* command = app.add_subcommand(
      "ab",
      "CMD observed vs tuned in interleaved runs, or two arms of a fleet read from Prometheus: a verdict per metric, "
      "plots, a report");
  CLI::Option* runs = command->add_option("--runs", ab.runs, "runs per arm, 1 to 1000 (default: 5)")
                          ->option_text("N")
                          ->check(whole_number(1, 1000));
  CLI::Option* policy =
      command->add_option("--policy", ab.policy, "the tuned arm's policy (default: the built-in default)")
          ->option_text("FILE");
  CLI::Option* preset = add_preset(*command, ab.policy, "instead of --policy FILE")->excludes(policy);
  command
      ->add_option("--out", ab.out,
                   "directory for logs, summary.txt/.json, plots and report.html (default: tcptune-ab)")
      ->option_text("DIR");
  CLI::Option* run_timeout =
      command
          ->add_option("--run-timeout", ab.run_timeout,
                       "stop a run still going after DURATION (SIGTERM, SIGKILL 5 s later) and count it failed "
                       "(default: none)")
          ->option_text("DURATION")
          ->check(duration_from(0));
  CLI::Option* prometheus =
      command
          ->add_option("--prometheus", ab.prometheus,
                       "compare two arms already running (TCPTUNE_ARM, or a scrape label) from this Prometheus "
                       "server's API, step by step over --window, instead of running CMD (plain http)")
          ->option_text("URL")
          ->excludes(runs)
          ->excludes(policy)
          ->excludes(preset)
          ->excludes(run_timeout);
  command->add_option("--arm-label", ab.arm_label, "with --prometheus: the label naming the arm (default: arm)")
      ->option_text("LABEL")
      ->check(label_name())
      ->needs(prometheus);
  command->add_option("--on", ab.on, "with --prometheus: the tuned arm's label value (default: on)")
      ->option_text("VALUE")
      ->needs(prometheus);
  command
      ->add_option("--off", ab.off,
                   "with --prometheus: the arm that observes (tcptune run --observe), its label value (default: off)")
      ->option_text("VALUE")
      ->needs(prometheus);
  command
      ->add_option("--window", ab.window,
                   "with --prometheus: how far back from --end to compare (default: 1h; e.g. 10m, 6h)")
      ->option_text("DURATION")
      ->check(duration_from(2))
      ->needs(prometheus);
  command
      ->add_option("--step", ab.step,
                   "with --prometheus: one sample per arm and step, steps not overlapping; at least twice the scrape "
                   "interval (default: 1m)")
      ->option_text("DURATION")
      ->check(duration_from(1))
      ->needs(prometheus);
  command->add_option("--end", ab.end, "with --prometheus: the window's end, Unix seconds (default: now)")
      ->option_text("TIME")
      ->check(CLI::PositiveNumber)
      ->needs(prometheus);
  command->add_option("--program", ab.program, "with --prometheus: only this program's series (program label)")
      ->option_text("NAME")
      ->needs(prometheus);
  command
      ->add_option("--selector", ab.selector,
                   "with --prometheus: more label matchers for every query, as inside PromQL's braces (e.g. "
                   "'app=\"orders\",namespace=\"shop\"')")
      ->option_text("MATCHERS")
      ->needs(prometheus);
  add_program(*command, ab.command)->required(false);
}

// A Kubernetes name: a DNS subdomain (ConfigMap names), or a ConfigMap key.
CLI::Validator kubernetes_name(const char* what, const char* pattern, std::size_t longest = 253) {
  return {[what, pattern, longest](const std::string& text) -> std::string {
            if (text.size() > longest || !std::regex_match(text, std::regex(pattern))) {
              return "'" + text + "' is not a valid " + what;
            }
            return {};
          },
          what};
}

void add_kube_inject(CLI::App& app, KubeInjectOptions& options) {
  CLI::App* command = app.add_subcommand(
      "kube-inject",
      "add tcptune to Kubernetes manifests (init container, LD_PRELOAD, policy ConfigMap); stdin to stdout");
  command->add_option("-f,--filename", options.file, "manifests to read, multi-document YAML (default: stdin)")
      ->option_text("FILE");
  command->add_option("-o,--output", options.output, "where to write them (default: stdout)")->option_text("FILE");
  command->add_flag("--uninject", options.uninject, "take out what kube-inject added, giving the input back");
  command->add_flag("-q,--quiet", options.quiet,
                    "no notes on stderr about what a manifest cannot show (errors are still said)");
  options.image = "tcptune-init:" TCPTUNE_VERSION;
  command
      ->add_option("--image", options.image,
                   "the init container's image, holding /tcptune (default: " + options.image + ")")
      ->option_text("IMAGE")
      ->check(kubernetes_name("image reference", R"([^\s]+)", 4096));
  command
      ->add_option("--policy-configmap", options.policy_configmap,
                   "the ConfigMap holding the policy (default: none, the built-in default policy)")
      ->option_text("NAME")
      ->check(kubernetes_name("ConfigMap name", R"([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*)"));
  command->add_option("--policy-key", options.policy_key, "the policy's key in that ConfigMap (default: policy.toml)")
      ->option_text("KEY")
      ->check(kubernetes_name("ConfigMap key", R"([-._a-zA-Z0-9]+)"));
}

void add_install(CLI::App& app, InstallOptions& options) {
  CLI::App* command =
      app.add_subcommand("install",
                         "copy this tcptune and the shim (libtcptune.so and its core) into DIR, as kube-inject's init "
                         "container does");
  command->add_option("DIR", options.destination, "where to copy them")->required();
}

void add_enable(CLI::App& app, EnableOptions& options) {
  CLI::App* command = app.add_subcommand(
      "enable",
      "tune a systemd service: a drop-in in /etc/systemd/system/UNIT.d/ (LD_PRELOAD, or ExecStart= wrapped in "
      "tcptune run for static and Go programs), a snapshot of the unit as it is now");
  command->add_option("UNIT", options.unit, "the service (nginx, nginx.service, getty@.service, getty@tty1.service)")
      ->required();
  command
      ->add_option("--policy", options.policy,
                   "policy file, written as TCPTUNE_POLICY (validated first; exit 78 "
                   "if invalid; default: what the shim finds, /etc/tcptune/policy.toml)")
      ->option_text("FILE");
  command->add_option("--root", options.root, "the root file system the unit is on (an image); default: /")
      ->option_text("DIR");
  command->add_flag("--supervise", options.supervise,
                    "wrap ExecStart= in tcptune run --supervise whatever the program (for one the inspection cannot "
                    "see, such as a script that execs a static program)");
}

void add_disable(CLI::App& app, DisableOptions& options) {
  CLI::App* command =
      app.add_subcommand("disable", "remove the drop-in tcptune enable wrote (and the directory, if it made it)");
  command->add_option("UNIT", options.unit, "the service")->required();
  command->add_option("--root", options.root, "the root file system the unit is on (an image); default: /")
      ->option_text("DIR");
}

// Each command's help ends with an example and the manual (`tcptune CMD --help`).
struct CommandExample {
  std::string_view command;
  std::string_view example;
};
constexpr std::array<CommandExample, 10> kExamples{{
    {"run", "tcptune run --preset low-latency-rpc -- ./legacy_app --port 8080"},
    {"check", "tcptune check /etc/tcptune/policy.toml"},
    {"doctor", "tcptune doctor"},
    {"report", "tcptune report --by peer ~/.local/state/tcptune/*.jsonl"},
    {"advise", "tcptune advise --output advised.toml client.jsonl server.jsonl"},
    {"ab", "tcptune ab --runs 5 --policy policy.toml -- ./client"},
    {"kube-inject", "tcptune kube-inject -f app.yaml --policy-configmap tcptune-policy | kubectl apply -f -"},
    {"install", "tcptune install /tcptune-volume"},
    {"enable", "tcptune enable nginx.service --policy /etc/tcptune/policy.toml"},
    {"disable", "tcptune disable nginx.service"},
}};
constexpr std::string_view kManual =
    "Manual: man tcptune (commands), man tcptune-policy (the policy), man libtcptune (the shim)";

void add_footers(CLI::App& app) {
  for (CLI::App* command : app.get_subcommands([](CLI::App*) { return true; })) {
    std::string footer = command->get_footer();
    for (const CommandExample& entry : kExamples) {
      if (entry.command == command->get_name()) {
        footer += std::string(footer.empty() ? "" : "\n") + "Example: " + std::string(entry.example);
      }
    }
    command->footer(footer + (footer.empty() ? "" : "\n") + std::string(kManual));
  }
  app.footer("Example: tcptune run --policy /etc/tcptune/policy.toml -- ./legacy_app args\n" + std::string(kManual));
}

CommandLine ended(int status, std::string message, bool to_stderr) {
  CommandLine line;
  line.exit_status = status;
  line.message = std::move(message);
  line.message_to_stderr = to_stderr;
  return line;
}

// An ExtrasError names the first argument no option or positional took, as the old parser did.
std::string unexpected(const CLI::App& app, const CLI::ExtrasError& error) {
  const std::vector<CLI::App*> chosen = app.get_subcommands();
  for (const std::string& arg : chosen.empty() ? app.remaining() : chosen.front()->remaining()) {
    if (arg != "--") {
      return (arg.rfind('-', 0) == 0 ? "unknown option '" : "unexpected argument '") + arg + "'";
    }
  }
  return error.what();
}

// "tcptune run: --runs: ..." and where to look for the options.
CommandLine usage_error(const CLI::App& app, const std::string& what) {
  const std::vector<CLI::App*> chosen = app.get_subcommands();
  const std::string name = chosen.empty() ? "tcptune" : "tcptune " + chosen.front()->get_name();
  return ended(kExitUsage, name + ": " + what + "\nsee '" + name + " --help'\n", true);
}

}  // namespace

void define_command_line(CLI::App& app, CommandLine& line) {
  app.name("tcptune");
  app.description("tcptune: TCP tuning for unmodified programs through an LD_PRELOAD shim");
  app.set_version_flag("--version", "tcptune " TCPTUNE_VERSION, "print the version");
  app.require_subcommand(0, 1);
  add_run(app, line.run);
  add_check(app, line.check);
  app.add_subcommand("doctor", "this network namespace's TCP settings and what they mean for tcptune");
  add_report(app, line.report);
  add_advise(app, line.advise);
  add_ab(app, line.ab);
  add_kube_inject(app, line.kube_inject);
  add_install(app, line.install);
  add_enable(app, line.enable);
  add_disable(app, line.disable);
  add_footers(app);
}

CommandLine parse_command_line(const std::vector<std::string>& args) {
  CommandLine line;
  CLI::App app;
  define_command_line(app, line);

  if (args.empty()) {
    return ended(kExitUsage, app.help(), true);
  }
  if (args.front() == "help") {
    return ended(0, app.help(), false);
  }
  const bool known = std::any_of(kSubcommands.begin(), kSubcommands.end(),
                                 [&](const SubcommandName& entry) { return entry.name == args.front(); });
  if (!known && args.front().rfind('-', 0) != 0) {
    return ended(kExitUsage, "tcptune: unknown command '" + args.front() + "'\n" + app.help(), true);
  }
  try {
    std::vector<std::string> reversed(args.rbegin(), args.rend());  // CLI11 takes them last first
    app.parse(reversed);
  } catch (const CLI::CallForHelp&) {
    return ended(0, app.help(), false);
  } catch (const CLI::CallForAllHelp&) {
    return ended(0, app.help("", CLI::AppFormatMode::All), false);
  } catch (const CLI::CallForVersion&) {
    return ended(0, "tcptune " TCPTUNE_VERSION "\n", false);
  } catch (const CLI::ExtrasError& error) {
    return usage_error(app, unexpected(app, error));
  } catch (const CLI::ParseError& error) {
    return usage_error(app, error.what());
  }
  const std::vector<CLI::App*> chosen = app.get_subcommands();
  if (chosen.empty()) {
    return ended(kExitUsage, app.help(), true);
  }
  for (const SubcommandName& entry : kSubcommands) {
    if (entry.name == chosen.front()->get_name()) {
      line.subcommand = entry.subcommand;
    }
  }
  // ab has always required "--" before CMD (run also takes CMD without it); with --prometheus
  // the arms are already running, and there is no CMD.
  if (line.subcommand == Subcommand::ab && line.ab.prometheus.empty()) {
    if (line.ab.command.empty()) {
      return usage_error(app, "CMD is required: tcptune ab [OPTIONS] -- CMD ARGS..., or tcptune ab --prometheus URL");
    }
    const std::vector<std::string> rest = chosen.front()->remaining();
    if (std::find(rest.begin(), rest.end(), "--") == rest.end()) {
      return usage_error(app, "CMD must follow --: tcptune ab [OPTIONS] -- CMD ARGS...");
    }
  }
  if (line.subcommand == Subcommand::ab && !line.ab.prometheus.empty() && !line.ab.command.empty()) {
    return usage_error(app, "--prometheus compares two arms already running: it takes no CMD");
  }
  if (line.subcommand == Subcommand::ab && !line.ab.prometheus.empty() &&
      (line.ab.on.empty() || line.ab.off.empty() || line.ab.on == line.ab.off)) {
    return usage_error(app, "--on and --off name two different arms");
  }
  return line;
}

}  // namespace tcptune::cli
