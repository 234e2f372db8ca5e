#include "service_dropin.hpp"

#include <algorithm>
#include <optional>
#include <utility>

#include "program_launch.hpp"
#include "systemctl_steps.hpp"
#include "tcptune/config/log_destination.hpp"
#include "unit_file_syntax.hpp"
#include "unit_words.hpp"

namespace tcptune::cli {

namespace {

// What tcptune run passes on to the program (program_launch.hpp); SIGINT and SIGQUIT it ignores,
// as a shell's foreground job does: a terminal sends them to the program too.
constexpr const char* kForwardedSignals = "SIGTERM, SIGHUP, SIGUSR1 and SIGUSR2";

// Whether tcptune run passes a KillSignal= on ("SIGTERM", "TERM", "15"...).
bool forwarded(std::string signal) {
  if (signal.empty()) {
    return true;  // SIGTERM
  }
  if (signal.starts_with("SIG")) {
    signal = signal.substr(3);
  }
  for (const char* name : {"TERM", "15", "HUP", "1", "USR1", "10", "USR2", "12"}) {
    if (signal == name) {
      return true;
    }
  }
  return false;
}

std::string literal_percent(std::string_view text) {
  std::string out;
  for (const char c : text) {
    out += c;
    if (c == '%') {
      out += '%';
    }
  }
  return out;
}

bool is_zero_or_unset(const std::string& watchdog) {
  return watchdog.empty() || watchdog == "0" || watchdog == "infinity";
}

bool unsets(const ServiceSettings& settings, std::string_view name) {
  return std::any_of(
      settings.unset_environment.begin(), settings.unset_environment.end(),
      [&](const std::string& entry) { return entry == name || entry.starts_with(std::string(name) + "="); });
}

// Why ExecStart= must be wrapped in tcptune run, one reason a line; none: LD_PRELOAD will do.
std::vector<std::string> wrap_reasons(const DropinRequest& request) {
  std::vector<std::string> reasons;
  if (request.supervise) {
    reasons.emplace_back("--supervise: every program is tuned from outside");
  }
  for (const ServiceProgram& program : request.programs) {
    if (program.bypasses_loader) {
      reasons.insert(reasons.end(), program.reasons.begin(), program.reasons.end());
    }
  }
  for (const std::string& file : request.preload_files) {
    reasons.push_back("EnvironmentFile=" + file +
                      " sets LD_PRELOAD, which replaces Environment='s: tcptune run adds the shim to it instead");
  }
  if (unsets(request.settings, "LD_PRELOAD")) {
    reasons.emplace_back("UnsetEnvironment= takes LD_PRELOAD out: tcptune run sets it for the program itself");
  }
  return reasons;
}

std::string wrapped_command(const DropinRequest& request, const ExecCommand& command) {
  std::string line = command.prefixes + quote_unit_word(request.tcptune, true) + " run -q";
  if (request.supervise) {
    line += " --supervise";
  }
  // The program becomes an argument, where $VAR is expanded unless ':' says not to.
  line += " -- " + quote_unit_word(command.program, false, command.expands_variables());
  if (!command.arguments.empty()) {
    line += " " + command.arguments;
  }
  return line;
}

// TCPTUNE_LOG: the journal (the service's stderr) unless the unit names a file of its own.
void plan_log(const DropinRequest& request, std::vector<std::string>& lines, DropinPlan& plan) {
  const std::string journal = "the journal: journalctl -u " + units_for_shell(request.unit);
  const EnvironmentEntry* own = request.settings.environment_entry("TCPTUNE_LOG");
  if (own != nullptr && (config::is_stderr_log(own->value) || own->value.starts_with('/'))) {
    plan.notes.push_back("log: the unit's own TCPTUNE_LOG=" + own->value + " (" + own->origin.to_string() + ")" +
                         (config::is_stderr_log(own->value) ? ", " + journal : ""));
    return;
  }
  if (own != nullptr) {
    plan.warnings.push_back("the unit's TCPTUNE_LOG=" + own->value + " (" + own->origin.to_string() +
                            ") is not an absolute path, so it would land in the service's working directory: "
                            "replaced by TCPTUNE_LOG=stderr");
  }
  lines.emplace_back("Environment=TCPTUNE_LOG=stderr");
  plan.notes.push_back("log: TCPTUNE_LOG=stderr, " + journal);
  if (unsets(request.settings, "TCPTUNE_LOG")) {
    plan.warnings.emplace_back("UnsetEnvironment= takes TCPTUNE_LOG out: no log");
  }
}

bool plan_preload(const DropinRequest& request, std::vector<std::string>& lines, DropinPlan& plan) {
  if (std::string problem = unpreloadable_path_problem(request.shim); !problem.empty()) {
    plan.refusal = std::move(problem);
    return false;
  }
  const EnvironmentEntry* own = request.settings.environment_entry("LD_PRELOAD");
  std::string kept = own != nullptr ? own->value : "";
  if (const std::optional<std::string> without = preload_without_shim(kept.c_str()); without.has_value()) {
    kept = *without;  // an earlier shim (another install path) gives way to this one
  }
  const std::string preload = preload_with_shim_first(request.shim, kept.c_str());
  const std::string rest = preload.substr(request.shim.size());
  lines.push_back("Environment=" + quote_unit_word("LD_PRELOAD=" + literal_percent(request.shim) + rest, false));
  plan.notes.push_back("LD_PRELOAD=" + preload);
  if (own != nullptr && !rest.empty()) {
    plan.notes.push_back("  the shim first, then the unit's own LD_PRELOAD as it is now (" + own->origin.to_string() +
                         "): after changing it, run tcptune enable again");
  }
  return true;
}

bool plan_wrap(const DropinRequest& request, const std::vector<std::string>& reasons, std::vector<std::string>& lines,
               std::vector<std::string>& comments, DropinPlan& plan) {
  const std::string type = request.settings.service_type();
  if (type == "forking") {
    plan.refusal =
        "Type=forking: tcptune run waits for the program and everything it starts, so the start would never end; "
        "run the program in the foreground (Type=simple, exec or notify) and enable again";
    return false;
  }
  for (const ExecCommand& command : request.commands) {
    if (command.sets_argv0()) {
      plan.refusal = "ExecStart=@" + command.program +
                     " sets the program's argv[0], which tcptune run cannot pass on: not wrapped";
      return false;
    }
  }
  for (const std::string& reason : reasons) {
    comments.push_back("# " + reason + ".");
    plan.notes.push_back(reason);
  }
  comments.push_back("# ExecStart= is wrapped in tcptune run, which tunes the program from outside where the loader");
  comments.push_back("# cannot preload the shim. Supervising, tcptune run is the main process ($MAINPID): it passes");
  comments.push_back(std::string("# ") + kForwardedSignals + " to the program.");
  plan.notes.push_back("ExecStart= wrapped in tcptune run (supervised mode where the loader cannot preload the shim)");
  plan.notes.push_back(std::string("$MAINPID is tcptune run while it supervises the program, and it passes ") +
                       kForwardedSignals + " on (a program it preloads into replaces it: exec)");
  lines.emplace_back("ExecStart=");
  for (const ExecCommand& command : request.commands) {
    lines.push_back("ExecStart=" + wrapped_command(request, command));
  }
  const std::string& kill_mode = request.settings.kill_mode.value;
  const SingleSetting& kill_signal = request.settings.kill_signal;
  if ((kill_mode.empty() || kill_mode == "control-group") && forwarded(kill_signal.value)) {
    comments.emplace_back("# KillMode=mixed: the stop signal goes to tcptune run alone, which passes it on once.");
    lines.emplace_back("KillMode=mixed");
    plan.notes.emplace_back("KillMode=mixed: systemctl stop signals tcptune run, which passes the signal on once");
  } else if (!forwarded(kill_signal.value) && (kill_mode == "mixed" || kill_mode == "process")) {
    plan.warnings.push_back("KillMode=" + kill_mode + " with KillSignal=" + kill_signal.value +
                            ": the stop signal goes to tcptune run alone, which does not pass it on, so the program "
                            "stops only at TimeoutStopSec= (SIGKILL)");
  } else if (!forwarded(kill_signal.value)) {
    plan.notes.push_back("KillSignal=" + kill_signal.value + " (" + kill_signal.origin.to_string() +
                         "): tcptune run does not pass it on, so it keeps going to the whole control group");
  }
  const bool notifies =
      type == "notify" || type == "notify-reload" || !is_zero_or_unset(request.settings.watchdog_sec.value);
  if (notifies && request.settings.notify_access.value != "all") {
    comments.emplace_back("# NotifyAccess=all: READY=1 and WATCHDOG=1 come from the program, a child of tcptune run.");
    lines.emplace_back("NotifyAccess=all");
    plan.notes.emplace_back("NotifyAccess=all: the program, a child of tcptune run, sends READY=1 (sd_notify)");
  }
  return true;
}

}  // namespace

DropinPlan plan_dropin(const DropinRequest& request) {
  DropinPlan plan;
  if (request.commands.empty()) {
    plan.refusal = "it has no ExecStart=: no program to tune";
    return plan;
  }
  for (const ServiceProgram& program : request.programs) {
    if (!program.found) {
      plan.warnings.push_back("ExecStart= program " + program.program + ": " + program.note +
                              "; taken for one the loader preloads into (if it is static or Go: --supervise)");
    }
  }
  const std::vector<std::string> reasons = wrap_reasons(request);
  plan.wraps = !reasons.empty();
  std::vector<std::string> lines;     // under [Service]
  std::vector<std::string> comments;  // before it
  if (plan.wraps ? !plan_wrap(request, reasons, lines, comments, plan) : !plan_preload(request, lines, plan)) {
    return plan;
  }
  plan_log(request, lines, plan);
  if (!request.policy.empty()) {
    lines.push_back("Environment=" + quote_unit_word("TCPTUNE_POLICY=" + request.policy, true));
  }
  // The commands in the comments, as they are typed (a-b\x2dc.service quoted).
  const std::string& name = request.unit.name;
  const std::string typed = unit_name_for_shell(name);
  plan.text = std::string(kDropinMarker) + " for " + name + "; tcptune disable " + typed + " removes it.\n";
  if (request.made_directory) {
    plan.text += std::string(kMadeDirectoryMarker) + ": tcptune disable removes it when it is empty.\n";
  }
  plan.text += "# A snapshot of the unit as it was: after changing the unit, run tcptune enable " + typed + " again.\n";
  for (const std::string& comment : comments) {
    plan.text += comment + "\n";
  }
  plan.text += "[Service]\n";
  for (const std::string& line : lines) {
    plan.text += line + "\n";
  }
  return plan;
}

bool is_tcptune_dropin(std::string_view text) {
  return text.starts_with(kDropinMarker);
}

bool dropin_made_directory(std::string_view text) {
  return text.find(std::string("\n") + std::string(kMadeDirectoryMarker)) != std::string_view::npos;
}

DropinChoices dropin_choices(std::string_view text) {
  DropinChoices choices;
  ServiceSettings written;
  written.apply(kDropinFileName, parse_unit_file(text));
  if (const EnvironmentEntry* policy = written.environment_entry("TCPTUNE_POLICY"); policy != nullptr) {
    // Written with '%' doubled (no specifier): the path itself.
    for (std::size_t at = 0; at < policy->value.size(); ++at) {
      choices.policy += policy->value[at];
      at += policy->value.compare(at, 2, "%%") == 0 ? 1 : 0;
    }
  }
  // A wrapped command is PREFIXES TCPTUNE run -q [--supervise] -- PROGRAM... (wrapped_command).
  for (const ExecStartLine& line : written.exec_start) {
    const UnitWords words = split_unit_words(line.value, true);
    const auto is = [](std::string_view wanted) {
      return [wanted](const UnitWord& word) { return word.text == wanted; };
    };
    const auto end = std::find_if(words.words.begin(), words.words.end(), is("--"));
    choices.supervise = choices.supervise || std::find_if(words.words.begin(), end, is("--supervise")) != end;
  }
  return choices;
}

}  // namespace tcptune::cli
