#include "command_line.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

namespace tcptune::cli {
namespace {

using Args = std::vector<std::string>;

// A usage error: nothing to run, exit 2, the message on stderr.
void expect_usage_error(const CommandLine& line, const std::string& text) {
  EXPECT_FALSE(line.subcommand.has_value());
  EXPECT_EQ(line.exit_status, 2);
  EXPECT_TRUE(line.message_to_stderr);
  EXPECT_NE(line.message.find(text), std::string::npos) << line.message;
}

TEST(CommandLine, RunTakesItsOptionsThenTheProgramAfterDoubleDash) {
  const CommandLine line =
      parse_command_line({"run", "--policy", "p.toml", "--log", "x.log", "-v", "-q", "--", "prog", "-v", "--log", "y"});
  ASSERT_EQ(line.subcommand, Subcommand::run);
  EXPECT_EQ(line.run.policy, "p.toml");
  EXPECT_EQ(line.run.log, "x.log");
  EXPECT_TRUE(line.run.verbose);
  EXPECT_TRUE(line.run.quiet);
  EXPECT_FALSE(line.run.no_log);
  EXPECT_EQ(line.run.command, (Args{"prog", "-v", "--log", "y"}));
}

TEST(CommandLine, RunTakesTheProgramWithoutDoubleDashToo) {
  const CommandLine line = parse_command_line({"run", "--no-log", "sh", "-c", "echo -- -v"});
  ASSERT_EQ(line.subcommand, Subcommand::run);
  EXPECT_TRUE(line.run.no_log);
  EXPECT_FALSE(line.run.verbose);
  EXPECT_EQ(line.run.command, (Args{"sh", "-c", "echo -- -v"}));
}

TEST(CommandLine, ASecondDoubleDashBelongsToTheProgram) {
  const CommandLine line = parse_command_line({"run", "--", "prog", "--", "x"});
  ASSERT_EQ(line.subcommand, Subcommand::run);
  EXPECT_EQ(line.run.command, (Args{"prog", "--", "x"}));
}

TEST(CommandLine, AProgramStartingWithADashFollowsDoubleDash) {
  const CommandLine line = parse_command_line({"run", "--", "-v"});
  ASSERT_EQ(line.subcommand, Subcommand::run);
  EXPECT_FALSE(line.run.verbose);
  EXPECT_EQ(line.run.command, (Args{"-v"}));
}

TEST(CommandLine, RunDefaults) {
  const CommandLine line = parse_command_line({"run", "--", "true"});
  ASSERT_EQ(line.subcommand, Subcommand::run);
  EXPECT_EQ(line.run.policy, "");
  EXPECT_EQ(line.run.log, "");
  EXPECT_FALSE(line.run.quiet || line.run.verbose || line.run.no_log);
}

TEST(CommandLine, RunWithoutAProgramIsAUsageError) {
  expect_usage_error(parse_command_line({"run"}), "tcptune run: CMD is required");
  expect_usage_error(parse_command_line({"run", "-v", "--"}), "CMD is required");
}

TEST(CommandLine, UnknownOptionsAreNamed) {
  expect_usage_error(parse_command_line({"run", "--bogus", "--", "true"}), "tcptune run: unknown option '--bogus'");
  expect_usage_error(parse_command_line({"ab", "--verbose", "--", "true"}), "tcptune ab: unknown option '--verbose'");
  expect_usage_error(parse_command_line({"report", "--html", "x.jsonl"}), "unknown option '--html'");
  expect_usage_error(parse_command_line({"check", "a.toml", "b.toml"}), "unexpected argument 'b.toml'");
  // An empty user (an unset variable: --as-user "$SERVICE_USER") would silently mean this process.
  expect_usage_error(parse_command_line({"check", "--as-user", "", "a.toml"}), "not empty");
  expect_usage_error(parse_command_line({"doctor", "now"}), "unexpected argument 'now'");
}

TEST(CommandLine, AnOptionWithoutItsValueIsAUsageError) {
  expect_usage_error(parse_command_line({"run", "--policy"}), "--policy");
  expect_usage_error(parse_command_line({"ab", "--out"}), "--out");
}

TEST(CommandLine, AbRunsMustBeAWholeNumberFromOneToAThousand) {
  for (const char* bad : {"3x", "x3", "", "0", "1001", "-1", "1.5", "1e3", " 3"}) {
    expect_usage_error(parse_command_line({"ab", "--runs", bad, "--", "true"}),
                       std::string("tcptune ab: --runs: '") + bad + "' is not a whole number from 1 to 1000");
  }
  for (const auto& [text, runs] : {std::pair{"1", 1}, std::pair{"1000", 1000}, std::pair{"7", 7}}) {
    const CommandLine line = parse_command_line({"ab", "--runs", text, "--", "true"});
    ASSERT_EQ(line.subcommand, Subcommand::ab) << line.message;
    EXPECT_EQ(line.ab.runs, runs);
  }
}

TEST(CommandLine, AbDefaultsAndOptions) {
  CommandLine line = parse_command_line({"ab", "--", "prog", "--runs", "9"});
  ASSERT_EQ(line.subcommand, Subcommand::ab) << line.message;
  EXPECT_EQ(line.ab.runs, 5);
  EXPECT_EQ(line.ab.out, "tcptune-ab");
  EXPECT_EQ(line.ab.policy, "");
  EXPECT_EQ(line.ab.command, (Args{"prog", "--runs", "9"}));
  line = parse_command_line({"ab", "--out", "d", "--policy", "p.toml", "--runs=2", "--", "prog"});
  ASSERT_EQ(line.subcommand, Subcommand::ab) << line.message;
  EXPECT_EQ(line.ab.out, "d");
  EXPECT_EQ(line.ab.policy, "p.toml");
  EXPECT_EQ(line.ab.runs, 2);
}

TEST(CommandLine, AbNeedsDoubleDashBeforeTheProgram) {
  expect_usage_error(parse_command_line({"ab", "--runs", "2", "prog"}), "CMD must follow --");
}

TEST(CommandLine, RunNamesItsArm) {
  CommandLine line = parse_command_line({"run", "--arm", "off", "--observe", "--policy", "fleet.toml", "--", "app"});
  ASSERT_EQ(line.subcommand, Subcommand::run) << line.message;
  EXPECT_EQ(line.run.arm, "off");
  EXPECT_TRUE(line.run.observe) << "--observe takes --policy's [log]";
  EXPECT_EQ(line.run.policy, "fleet.toml");
  expect_usage_error(parse_command_line({"run", "--arm", "on arm", "--", "app"}),
                     "tcptune run: --arm: 'on arm' is not an arm name");
  expect_usage_error(parse_command_line({"run", "--arm", "", "--", "app"}), "is not an arm name: it is empty");
  expect_usage_error(parse_command_line({"run", "--observe", "--no-log", "--", "app"}), "--no-log");
}

TEST(CommandLine, AbFromPrometheus) {
  CommandLine line = parse_command_line({"ab", "--prometheus", "http://127.0.0.1:9090", "--window", "10m", "--step",
                                         "30s", "--on", "tuned", "--off", "base", "--program", "orders"});
  ASSERT_EQ(line.subcommand, Subcommand::ab) << line.message;
  EXPECT_EQ(line.ab.prometheus, "http://127.0.0.1:9090");
  EXPECT_EQ(line.ab.window, "10m");
  EXPECT_EQ(line.ab.step, "30s");
  EXPECT_EQ(line.ab.on, "tuned");
  EXPECT_EQ(line.ab.off, "base");
  EXPECT_EQ(line.ab.arm_label, "arm");
  EXPECT_TRUE(line.ab.command.empty());
  expect_usage_error(parse_command_line({"ab", "--prometheus", "http://p:9090", "--", "prog"}),
                     "--prometheus compares two arms already running: it takes no CMD");
  expect_usage_error(parse_command_line({"ab", "--prometheus", "http://p:9090", "--runs", "3"}), "--runs");
  expect_usage_error(parse_command_line({"ab", "--prometheus", "http://p:9090", "--policy", "p.toml"}), "--policy");
  expect_usage_error(parse_command_line({"ab", "--on", "on", "--", "prog"}), "--prometheus");
  expect_usage_error(parse_command_line({"ab", "--prometheus", "http://p:9090", "--window", "10"}), "--window");
  expect_usage_error(parse_command_line({"ab", "--prometheus", "http://p:9090", "--step", "500ms"}),
                     "'500ms' is shorter than 1 s");
  expect_usage_error(parse_command_line({"ab", "--prometheus", "http://p:9090", "--arm-label", "a-b"}),
                     "'a-b' is not a Prometheus label name");
  expect_usage_error(parse_command_line({"ab", "--prometheus", "http://p:9090", "--on", "x", "--off", "x"}),
                     "--on and --off name two different arms");
  expect_usage_error(parse_command_line({"ab", "--prometheus", "http://p:9090", "--end", "yesterday"}), "--end");
  expect_usage_error(parse_command_line({"ab"}), "CMD is required");
}

TEST(CommandLine, ReportTakesLogsAndOptionsInAnyOrder) {
  const CommandLine line = parse_command_line({"report", "a.jsonl", "--by", "peer", "b.jsonl", "--json"});
  ASSERT_EQ(line.subcommand, Subcommand::report) << line.message;
  EXPECT_EQ(line.report.logs, (Args{"a.jsonl", "b.jsonl"}));
  EXPECT_EQ(line.report.by, "peer");
  EXPECT_TRUE(line.report.json);
  const CommandLine plain = parse_command_line({"report", "a.jsonl"});
  EXPECT_EQ(plain.report.by, "rule");
  EXPECT_FALSE(plain.report.json);
}

TEST(CommandLine, ReportByMustBeAKnownGrouping) {
  for (const char* by : {"rule", "peer", "program", "callsite"}) {
    EXPECT_EQ(parse_command_line({"report", "--by", by, "a.jsonl"}).report.by, by);
  }
  expect_usage_error(parse_command_line({"report", "--by", "host", "a.jsonl"}), "--by");
  expect_usage_error(parse_command_line({"report", "--json"}), "LOG is required");
}

TEST(CommandLine, CheckAndDoctor) {
  const CommandLine check = parse_command_line({"check", "policy.toml"});
  ASSERT_EQ(check.subcommand, Subcommand::check);
  EXPECT_EQ(check.check.policy_file, "policy.toml");
  // Without FILE: the built-in default is explained.
  const CommandLine builtin = parse_command_line({"check"});
  ASSERT_EQ(builtin.subcommand, Subcommand::check);
  EXPECT_EQ(builtin.check.policy_file, "");
  EXPECT_EQ(parse_command_line({"doctor"}).subcommand, Subcommand::doctor);
}

TEST(CommandLine, KubeInjectAndInstall) {
  const CommandLine plain = parse_command_line({"kube-inject"});
  ASSERT_EQ(plain.subcommand, Subcommand::kube_inject);
  EXPECT_EQ(plain.kube_inject.file, "-");
  EXPECT_EQ(plain.kube_inject.output, "-");
  EXPECT_FALSE(plain.kube_inject.uninject);
  EXPECT_FALSE(plain.kube_inject.quiet);
  EXPECT_EQ(plain.kube_inject.image.rfind("tcptune-init:", 0), 0U) << plain.kube_inject.image;
  EXPECT_EQ(plain.kube_inject.policy_key, "policy.toml");
  const CommandLine full = parse_command_line({"kube-inject", "-f", "in.yaml", "-o", "out.yaml", "--uninject",
                                               "--image", "reg/tcptune-init:1", "--policy-configmap", "tcptune.policy",
                                               "--policy-key", "p.toml", "--quiet"});
  ASSERT_EQ(full.subcommand, Subcommand::kube_inject);
  EXPECT_TRUE(full.kube_inject.quiet);
  EXPECT_TRUE(parse_command_line({"kube-inject", "-q"}).kube_inject.quiet);
  EXPECT_EQ(full.kube_inject.file, "in.yaml");
  EXPECT_EQ(full.kube_inject.output, "out.yaml");
  EXPECT_TRUE(full.kube_inject.uninject);
  EXPECT_EQ(full.kube_inject.image, "reg/tcptune-init:1");
  EXPECT_EQ(full.kube_inject.policy_configmap, "tcptune.policy");
  EXPECT_EQ(full.kube_inject.policy_key, "p.toml");
  expect_usage_error(parse_command_line({"kube-inject", "--policy-configmap", "Policy"}), "'Policy' is not a valid");
  expect_usage_error(parse_command_line({"kube-inject", "--policy-configmap", "-a"}), "--policy-configmap");
  expect_usage_error(parse_command_line({"kube-inject", "--policy-key", "a/b"}), "'a/b' is not a valid");
  expect_usage_error(parse_command_line({"kube-inject", "extra"}), "unexpected argument 'extra'");
  const CommandLine install = parse_command_line({"install", "/dir"});
  ASSERT_EQ(install.subcommand, Subcommand::install);
  EXPECT_EQ(install.install.destination, "/dir");
  expect_usage_error(parse_command_line({"install"}), "DIR is required");
  const CommandLine enable =
      parse_command_line({"enable", "nginx", "--policy", "/etc/p.toml", "--root", "/img", "--supervise"});
  ASSERT_EQ(enable.subcommand, Subcommand::enable);
  EXPECT_EQ(enable.enable.unit, "nginx");
  EXPECT_EQ(enable.enable.policy, "/etc/p.toml");
  EXPECT_EQ(enable.enable.root, "/img");
  EXPECT_TRUE(enable.enable.supervise);
  expect_usage_error(parse_command_line({"enable"}), "UNIT is required");
  const CommandLine disable = parse_command_line({"disable", "getty@tty1.service", "--root", "/img"});
  ASSERT_EQ(disable.subcommand, Subcommand::disable);
  EXPECT_EQ(disable.disable.unit, "getty@tty1.service");
  EXPECT_EQ(disable.disable.root, "/img");
  expect_usage_error(parse_command_line({"disable", "x", "--policy", "p"}), "--policy");
}

TEST(CommandLine, HelpAndVersionGoToStdoutAndExitZero) {
  for (const Args& args : {Args{"--help"}, Args{"-h"}, Args{"help"}}) {
    const CommandLine line = parse_command_line(args);
    EXPECT_FALSE(line.subcommand.has_value());
    EXPECT_EQ(line.exit_status, 0);
    EXPECT_FALSE(line.message_to_stderr);
    for (const char* name : {"run", "check", "doctor", "report", "ab", "kube-inject", "install", "enable", "disable"}) {
      EXPECT_NE(line.message.find(name), std::string::npos) << name;
    }
  }
  const CommandLine version = parse_command_line({"--version"});
  EXPECT_EQ(version.exit_status, 0);
  EXPECT_EQ(version.message.rfind("tcptune ", 0), 0U) << version.message;
}

TEST(CommandLine, EachSubcommandHasItsOwnHelp) {
  const CommandLine run = parse_command_line({"run", "--help"});
  EXPECT_EQ(run.exit_status, 0);
  EXPECT_NE(run.message.find("--no-log"), std::string::npos) << run.message;
  EXPECT_EQ(run.message.find("--runs"), std::string::npos) << run.message;
  const CommandLine ab = parse_command_line({"ab", "--help"});
  EXPECT_NE(ab.message.find("--runs"), std::string::npos) << ab.message;
  EXPECT_NE(ab.message.find("-- CMD ARGS..."), std::string::npos) << ab.message;
  const CommandLine report = parse_command_line({"report", "-h"});
  EXPECT_NE(report.message.find("--by"), std::string::npos) << report.message;
}

TEST(CommandLine, NoArgumentsPrintsUsageOnStderr) {
  const CommandLine line = parse_command_line({});
  EXPECT_FALSE(line.subcommand.has_value());
  EXPECT_EQ(line.exit_status, 2);
  EXPECT_TRUE(line.message_to_stderr);
  EXPECT_NE(line.message.find("report"), std::string::npos);
}

TEST(CommandLine, UnknownCommand) {
  expect_usage_error(parse_command_line({"bogus"}), "tcptune: unknown command 'bogus'");
  expect_usage_error(parse_command_line({"--bogus"}), "unknown option '--bogus'");
}

// --preset NAME stands where --policy FILE (check: FILE) would: the preset's file, found in the
// presets directory beside the binary (for this test program, BUILD/share/tcptune/presets).
TEST(CommandLine, PresetIsTheInstalledFileOfThatName) {
  const std::string file = std::filesystem::canonical(TCPTUNE_SOURCE_DIR "/config/presets/nodelay.toml").string();
  const CommandLine run = parse_command_line({"run", "--preset", "nodelay", "--", "true"});
  ASSERT_EQ(run.subcommand, Subcommand::run);
  EXPECT_EQ(run.run.policy, file);
  const CommandLine check = parse_command_line({"check", "--preset", "nodelay.toml"});
  ASSERT_EQ(check.subcommand, Subcommand::check);
  EXPECT_EQ(check.check.policy_file, file);
  const CommandLine ab = parse_command_line({"ab", "--preset", "nodelay", "--", "true"});
  ASSERT_EQ(ab.subcommand, Subcommand::ab);
  EXPECT_EQ(ab.ab.policy, file);
}

TEST(CommandLine, PresetIsANameAndExcludesAPolicyFile) {
  expect_usage_error(parse_command_line({"run", "--preset", "no-such", "--", "true"}),
                     "tcptune run: --preset: no preset 'no-such' in ");
  expect_usage_error(parse_command_line({"check", "--preset", "../presets/nodelay"}), "is not a preset name");
  expect_usage_error(parse_command_line({"run", "--policy", "p.toml", "--preset", "nodelay", "--", "true"}),
                     "excludes");
  expect_usage_error(parse_command_line({"check", "p.toml", "--preset", "nodelay"}), "excludes");
}

}  // namespace
}  // namespace tcptune::cli
