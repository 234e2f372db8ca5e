// `tcptune enable UNIT`: a drop-in that tunes a systemd service (service_dropin.hpp), written in
// /etc/systemd/system/UNIT.d/ (under --root), from the unit and its other drop-ins as they are.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <system_error>

#include "commands.hpp"
#include "environment_file_names.hpp"
#include "program_launch.hpp"
#include "rooted_path.hpp"
#include "service_dropin.hpp"
#include "service_program.hpp"
#include "service_settings.hpp"
#include "service_unit_name.hpp"
#include "systemctl_steps.hpp"
#include "tcptune/config/escape.hpp"
#include "tcptune/config/policy_loader.hpp"
#include "text_file_io.hpp"
#include "unit_file_syntax.hpp"
#include "unit_lookup.hpp"

namespace tcptune::cli {

namespace {

namespace fs = std::filesystem;

constexpr const char* kSystemPolicy = "/etc/tcptune/policy.toml";

// What the command found out, for the lines it prints.
struct Findings {
  std::vector<std::string> notes;
  std::vector<std::string> warnings;
};

std::string shown(const std::string& text) {
  return config::escape_for_display(text, false);
}

// Why a root service loading `path` could be made to run another user's code: it, or a
// directory above it, is not root's or can be written by others. Empty when it is safe.
std::string writable_by_others(const std::string& path) {
  fs::path at(path);
  while (true) {
    struct stat info {};
    if (::stat(at.c_str(), &info) == 0 &&
        (info.st_uid != 0 || ((info.st_mode & (S_IWGRP | S_IWOTH)) != 0 && (info.st_mode & S_ISVTX) == 0))) {
      return at.string() + " can be written by a user other than root";
    }
    if (!at.has_relative_path()) {
      return {};
    }
    at = at.parent_path();
  }
}

// The unit's settings without tcptune's drop-in, and the drop-ins applied after it.
bool read_settings(const UnitFiles& files, const std::string& own_dropin, ServiceSettings& settings,
                   std::vector<std::string>& later, std::string& problem) {
  std::vector<std::string> sources{files.unit_file};
  for (const std::string& dropin : files.dropins) {
    // tcptune's drop-in masks any other of its name (a template's, when its instance is enabled
    // too), as a drop-in in a more specific directory does.
    std::error_code error;
    if (fs::equivalent(dropin, own_dropin, error) || fs::path(dropin).filename() == kDropinFileName) {
      continue;
    }
    sources.push_back(dropin);
    if (fs::path(dropin).filename().string() > kDropinFileName) {
      later.push_back(dropin);
    }
  }
  for (const std::string& source : sources) {
    std::string error;
    const std::optional<std::string> text = read_text_file(source, error);
    if (!text.has_value()) {
      problem = "cannot read " + source;
      problem += ": " + error;
      return false;
    }
    const UnitFileText parsed = parse_unit_file(*text);
    if (!parsed.error.empty()) {
      problem = source + ": " + parsed.error + " (systemd refuses such a file)";
      return false;
    }
    settings.apply(source, parsed);
  }
  return true;
}

// A drop-in applied after tcptune's that sets what tcptune's sets wins over it.
void warn_about_later_dropins(const std::vector<std::string>& later, bool wraps, Findings& findings) {
  for (const std::string& dropin : later) {
    std::string error;
    const std::optional<std::string> text = read_text_file(dropin, error);
    if (!text.has_value()) {
      continue;
    }
    ServiceSettings alone;
    alone.apply(dropin, parse_unit_file(*text));
    for (const char* name : {"LD_PRELOAD", "TCPTUNE_LOG", "TCPTUNE_POLICY"}) {
      if (const EnvironmentEntry* entry = alone.environment_entry(name); entry != nullptr) {
        findings.warnings.push_back(entry->origin.to_string() + " is applied after " + kDropinFileName + " and sets " +
                                    name + ", which replaces tcptune's");
      }
    }
    if (wraps && !alone.exec_start.empty()) {
      findings.warnings.push_back(alone.exec_start.front().origin.to_string() + " is applied after " + kDropinFileName +
                                  " and sets ExecStart=, which replaces the wrapped one");
    }
  }
}

// EnvironmentFile= overrides Environment=: an LD_PRELOAD there would replace the shim's.
std::vector<std::string> check_environment_files(const std::string& root, const ServiceUnitName& unit,
                                                 const ServiceSettings& settings, Findings& findings) {
  std::vector<std::string> preloading;
  for (const std::string& value : settings.environment_files) {
    const bool optional = value.starts_with('-');
    std::string path = optional ? value.substr(1) : value;
    const std::string unknown = "EnvironmentFile=" + value +
                                " could not be read now: if it sets LD_PRELOAD, that replaces the drop-in's "
                                "(tcptune enable --supervise does not depend on it)";
    if (!expand_name_specifiers(unit, path)) {
      findings.warnings.push_back(unknown);
      continue;
    }
    std::string error;
    const std::optional<std::string> text = read_text_file(resolve_in_root(root, path), error);
    if (!text.has_value()) {
      if (!(optional && error == std::generic_category().message(ENOENT))) {
        findings.warnings.push_back(unknown);
        findings.warnings.back() += " (" + error + ")";
      }
      continue;
    }
    const std::vector<std::string> names = environment_file_names(*text);
    const auto sets = [&](const char* name) { return std::find(names.begin(), names.end(), name) != names.end(); };
    if (sets("LD_PRELOAD")) {
      preloading.push_back(path);
    } else {
      findings.notes.push_back("EnvironmentFile=" + path +
                               " sets no LD_PRELOAD now (one set there later would replace the drop-in's)");
    }
    for (const char* name : {"TCPTUNE_LOG", "TCPTUNE_POLICY", "TCPTUNE_POLICY_TOML"}) {
      if (sets(name)) {
        findings.warnings.push_back("EnvironmentFile=" + path + " sets " + name + ", which overrides the drop-in's");
      }
    }
  }
  return preloading;
}

// The policy the service will use: --policy (validated, written as TCPTUNE_POLICY), the unit's
// own TCPTUNE_POLICY, or what the shim discovers. False (and exit 78) for an invalid --policy.
bool choose_policy(const EnableOptions& options, const ServiceSettings& settings, std::string& policy,
                   Findings& findings) {
  const bool has_user = !settings.user.value.empty() || settings.dynamic_user.value == "yes";
  if (!options.policy.empty()) {
    // A path of the system the unit is on, absolute, as the service will read it.
    if (!options.root.empty() && !options.policy.starts_with('/')) {
      (void)std::fprintf(stderr,
                         "tcptune enable: --policy %s: with --root, give the path the service will read "
                         "(absolute, on the system under the root)\n",
                         shown(options.policy).c_str());
      return false;
    }
    policy = options.root.empty() ? absolute(options.policy) : options.policy;
    const std::string here = resolve_in_root(options.root, policy);
    const config::LoadResult loaded = config::load_policy_file(here);
    if (!loaded.ok()) {
      (void)std::fprintf(stderr, "tcptune enable: %s\n", shown(loaded.error().to_string()).c_str());
      return false;
    }
    findings.notes.push_back("policy: TCPTUNE_POLICY=" + policy + ", read by each process as it starts");
    struct stat info {};
    if (has_user && ::stat(here.c_str(), &info) == 0 && (info.st_mode & S_IROTH) == 0) {
      findings.warnings.push_back(policy + " cannot be read by other users, and the service runs as User=" +
                                  (settings.user.value.empty() ? "(DynamicUser)" : settings.user.value) +
                                  ": it would run with the built-in default");
    }
    return true;
  }
  for (const char* name : {"TCPTUNE_POLICY", "TCPTUNE_POLICY_TOML"}) {
    if (const EnvironmentEntry* entry = settings.environment_entry(name); entry != nullptr) {
      findings.notes.push_back(std::string("policy: the unit's own ") + name + " (" + entry->origin.to_string() + ")");
      return true;
    }
  }
  const std::string here = resolve_in_root(options.root, kSystemPolicy);
  std::error_code error;
  if (!fs::exists(here, error)) {
    findings.notes.push_back(std::string("policy: none at ") + kSystemPolicy +
                             ": the built-in default (nodelay = \"on-wait\"); --policy FILE names one");
    return true;
  }
  const config::LoadResult loaded = config::load_policy_file(here);
  if (!loaded.ok()) {
    findings.warnings.push_back(loaded.error().to_string() + ": the service would run untuned until it is fixed");
  }
  findings.notes.push_back(std::string("policy: ") + kSystemPolicy + ", read by each process as it starts");
  return true;
}

void print_lines(const Findings& findings, const DropinPlan& plan) {
  for (const std::vector<std::string>* notes : {&plan.notes, &findings.notes}) {
    for (const std::string& note : *notes) {
      (void)std::printf("  %s\n", shown(note).c_str());
    }
  }
  for (const std::vector<std::string>* warnings : {&plan.warnings, &findings.warnings}) {
    for (const std::string& warning : *warnings) {
      (void)std::fprintf(stderr, "tcptune enable: warning: %s\n", shown(warning).c_str());
    }
  }
}

}  // namespace

int enable_command(const EnableOptions& options) {
  std::string problem;
  const std::optional<ServiceUnitName> given = parse_service_unit_name(options.unit, problem);
  if (!given.has_value()) {
    (void)std::fprintf(stderr, "tcptune enable: %s\n", shown(problem).c_str());
    return 1;
  }
  const std::string root = options.root == "/" ? std::string() : options.root;
  std::error_code error;
  if (!root.empty() && !fs::is_directory(root, error)) {
    (void)std::fprintf(stderr, "tcptune enable: --root %s is not a directory\n", shown(root).c_str());
    return 1;
  }
  const UnitFiles files = find_unit_files(root, *given);
  const std::string where = root.empty() ? "" : " under " + root;
  if (files.masked) {
    (void)std::fprintf(stderr, "tcptune enable: %s is masked (linked to /dev/null)%s: not enabled\n",
                       given->name.c_str(), where.c_str());
    return 1;
  }
  if (files.unit_file.empty()) {
    (void)std::fprintf(stderr,
                       "tcptune enable: no unit file %s in systemd's search path%s (systemd-analyze unit-paths)\n",
                       given->name.c_str(), where.c_str());
    return 1;
  }
  Findings findings;
  ServiceUnitName unit = *given;
  if (!files.real_name.empty()) {
    std::string alias_problem;
    if (const std::optional<ServiceUnitName> real = parse_service_unit_name(files.real_name, alias_problem)) {
      unit = *real;
      findings.notes.push_back(given->name + " is an alias of " + unit.name + ": the drop-in is " + unit.name + "'s");
    }
  }
  const std::string directory = under_root(root, std::string(kAdminUnitPath) + "/" + unit.name + ".d");
  const std::string path = directory + "/" + kDropinFileName;
  // A drop-in of tcptune's from before keeps what it knew: whether enable made the directory,
  // and what that enable was told (enable again is the refresh the drop-in asks for).
  bool made_directory = !fs::exists(directory, error);
  EnableOptions chosen = options;
  std::string read_error;
  if (const std::optional<std::string> previous = read_text_file(path, read_error); previous.has_value()) {
    if (!is_tcptune_dropin(*previous)) {
      (void)std::fprintf(stderr, "tcptune enable: %s was not written by tcptune enable: left alone, not enabled\n",
                         shown(path).c_str());
      return 1;
    }
    made_directory = dropin_made_directory(*previous);
    const DropinChoices before = dropin_choices(*previous);
    if (chosen.policy.empty() && !before.policy.empty()) {
      chosen.policy = before.policy;
      findings.notes.push_back("--policy " + before.policy + " kept from the drop-in (tcptune disable " +
                               unit_name_for_shell(unit.name) + " first to drop it)");
    }
    if (!chosen.supervise && before.supervise) {
      chosen.supervise = true;
      findings.notes.push_back("--supervise kept from the drop-in (tcptune disable " + unit_name_for_shell(unit.name) +
                               " first to drop it)");
    }
  }
  ServiceSettings settings;
  std::vector<std::string> later;
  if (!read_settings(files, path, settings, later, problem)) {
    (void)std::fprintf(stderr, "tcptune enable: %s: %s\n", unit.name.c_str(), shown(problem).c_str());
    return 1;
  }
  for (const std::string& ignored : settings.ignored) {
    findings.warnings.push_back(ignored);
  }
  DropinRequest request;
  request.unit = unit;
  request.supervise = chosen.supervise;
  request.made_directory = made_directory;
  for (const ExecStartLine& line : settings.exec_start) {
    ExecCommands parsed = parse_exec_value(line.value);
    if (!parsed.error.empty()) {
      (void)std::fprintf(stderr, "tcptune enable: %s: ExecStart=%s: %s: not enabled\n", line.origin.to_string().c_str(),
                         shown(line.value).c_str(), parsed.error.c_str());
      return 1;
    }
    for (ExecCommand& command : parsed.commands) {
      request.programs.push_back(inspect_service_program(root, unit, command));
      request.commands.push_back(std::move(command));
    }
  }
  request.preload_files = check_environment_files(root, unit, settings, findings);
  EnableOptions rooted = chosen;
  rooted.root = root;
  if (!choose_policy(rooted, settings, request.policy, findings)) {
    return kExitConfig;
  }
  request.tcptune = fs::read_symlink("/proc/self/exe", error).string();
  std::string shim_problem;
  request.shim = locate_shim(shim_problem);
  request.settings = std::move(settings);
  const DropinPlan plan = plan_dropin(request);
  if (!plan.refusal.empty()) {
    (void)std::fprintf(stderr, "tcptune enable: %s: %s\n", unit.name.c_str(), shown(plan.refusal).c_str());
    return 1;
  }
  if (!plan.wraps && request.shim.empty()) {
    (void)std::fprintf(stderr, "tcptune enable: %s\n", shim_problem.c_str());
    return 1;
  }
  warn_about_later_dropins(later, plan.wraps, findings);
  if (::geteuid() == 0) {
    const std::string risk = writable_by_others(plan.wraps ? request.tcptune : request.shim);
    if (!risk.empty()) {
      findings.warnings.push_back(risk + ": whoever can write it runs code in " + unit.name);
    }
  }
  for (const SingleSetting* moved : {&request.settings.root_directory, &request.settings.root_image}) {
    if (!moved->value.empty()) {
      findings.warnings.push_back(moved->origin.to_string() + ": the service has a root of its own (" + moved->value +
                                  "): the paths written here must exist in it too");
    }
  }
  std::string previous_text;
  if (const std::optional<std::string> previous = read_text_file(path, read_error)) {
    previous_text = *previous;
  }
  const char* what = previous_text.empty() ? "wrote" : (previous_text == plan.text ? "unchanged" : "refreshed");
  if (previous_text != plan.text) {
    fs::create_directories(directory, error);
    if (error) {
      (void)std::fprintf(stderr, "tcptune enable: cannot create %s: %s\n", shown(directory).c_str(),
                         error.message().c_str());
      return 1;
    }
    std::string write_error;
    if (!write_file_atomically(path, plan.text, write_error)) {
      (void)std::fprintf(stderr, "tcptune enable: %s\n", shown(write_error).c_str());
      return 1;
    }
  }
  (void)std::printf("tcptune enable: %s %s\n", what, shown(path).c_str());
  print_lines(findings, plan);
  (void)std::printf(
      "This is a snapshot of %s as it is now: after changing the unit or its drop-ins (or upgrading its package), "
      "run tcptune enable %s again.\n",
      unit.name.c_str(), unit_name_for_shell(options.unit).c_str());
  print_systemctl_steps(stdout, unit, root);
  return 0;
}

}  // namespace tcptune::cli
