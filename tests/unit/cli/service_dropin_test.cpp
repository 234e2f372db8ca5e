// The drop-in tcptune enable plans: read back as systemd reads it, it gives the service the shim
// and the unit's own preloads, or a wrapped ExecStart= with what that needs.
#include "service_dropin.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "exec_command_line.hpp"
#include "unit_file_syntax.hpp"

namespace tcptune::cli {
namespace {

constexpr const char* kShim = "/usr/lib/x86_64-linux-gnu/tcptune/libtcptune.so";
constexpr const char* kTcptune = "/usr/bin/tcptune";

DropinRequest request_for(const std::string& unit_text, bool static_program = false) {
  DropinRequest request;
  std::string problem;
  request.unit = *parse_service_unit_name("app.service", problem);
  request.settings.apply("/lib/systemd/system/app.service", parse_unit_file(unit_text));
  for (const ExecStartLine& line : request.settings.exec_start) {
    for (ExecCommand& command : parse_exec_value(line.value).commands) {
      ServiceProgram program;
      program.program = command.program;
      program.found = true;
      program.bypasses_loader = static_program;
      if (static_program) {
        program.reasons.push_back(command.program + " is statically linked");
      }
      request.programs.push_back(program);
      request.commands.push_back(std::move(command));
    }
  }
  request.shim = kShim;
  request.tcptune = kTcptune;
  return request;
}

// The service's settings with the drop-in applied after the unit, as systemd would have them.
ServiceSettings applied(const DropinRequest& request, const DropinPlan& plan) {
  ServiceSettings settings = request.settings;
  settings.apply("dropin", parse_unit_file(plan.text));
  return settings;
}

TEST(ServiceDropin, PreloadsTheShimFirstAndKeepsTheUnitsPreloads) {
  const DropinRequest request = request_for(
      "[Service]\nExecStart=/usr/sbin/app\nEnvironment=\"LD_PRELOAD=/usr/lib/libjemalloc.so.2 /opt/%i/x.so\" A=1\n");
  const DropinPlan plan = plan_dropin(request);
  ASSERT_TRUE(plan.refusal.empty()) << plan.refusal;
  EXPECT_FALSE(plan.wraps);
  const ServiceSettings settings = applied(request, plan);
  EXPECT_EQ(settings.environment_entry("LD_PRELOAD")->value,
            std::string(kShim) + ":/usr/lib/libjemalloc.so.2:/opt/%i/x.so");
  EXPECT_EQ(settings.environment_entry("TCPTUNE_LOG")->value, "stderr");
  EXPECT_EQ(settings.environment_entry("A")->value, "1");
  EXPECT_EQ(settings.exec_start.size(), 1U);  // ExecStart= untouched
  EXPECT_TRUE(is_tcptune_dropin(plan.text));
  EXPECT_FALSE(dropin_made_directory(plan.text));
}

TEST(ServiceDropin, AnEarlierShimGivesWayAndPercentInItsPathIsLiteral) {
  DropinRequest request =
      request_for("[Service]\nExecStart=/usr/sbin/app\nEnvironment=LD_PRELOAD=/old/lib/libtcptune.so:/a.so\n");
  request.shim = "/opt/50%/libtcptune.so";
  request.made_directory = true;
  request.policy = "/etc/tcptune/web.toml";
  const DropinPlan plan = plan_dropin(request);
  ASSERT_TRUE(plan.refusal.empty()) << plan.refusal;
  EXPECT_NE(plan.text.find("/opt/50%%/libtcptune.so"), std::string::npos) << plan.text;
  const ServiceSettings settings = applied(request, plan);
  EXPECT_EQ(settings.environment_entry("LD_PRELOAD")->value, "/opt/50%%/libtcptune.so:/a.so");
  EXPECT_EQ(settings.environment_entry("TCPTUNE_POLICY")->value, "/etc/tcptune/web.toml");
  EXPECT_TRUE(dropin_made_directory(plan.text));
}

TEST(ServiceDropin, TheUnitsOwnLogFileIsKeptButNeverARelativeOne) {
  const DropinRequest absolute_log =
      request_for("[Service]\nExecStart=/usr/sbin/app\nEnvironment=TCPTUNE_LOG=/var/log/app/t.jsonl\n");
  const DropinPlan kept = plan_dropin(absolute_log);
  EXPECT_EQ(applied(absolute_log, kept).environment_entry("TCPTUNE_LOG")->value, "/var/log/app/t.jsonl");
  const DropinRequest relative_log =
      request_for("[Service]\nExecStart=/usr/sbin/app\nEnvironment=TCPTUNE_LOG=t.jsonl\n");
  const DropinPlan replaced = plan_dropin(relative_log);
  EXPECT_EQ(applied(relative_log, replaced).environment_entry("TCPTUNE_LOG")->value, "stderr");
  EXPECT_EQ(replaced.warnings.size(), 1U);
}

TEST(ServiceDropin, AStaticProgramIsWrappedInTcptuneRun) {
  const DropinRequest request = request_for(
      "[Service]\nType=notify\nExecStart=-/usr/bin/app --listen \"a b\" $PORT\nEnvironment=LD_PRELOAD=/x.so\n", true);
  const DropinPlan plan = plan_dropin(request);
  ASSERT_TRUE(plan.refusal.empty()) << plan.refusal;
  EXPECT_TRUE(plan.wraps);
  const ServiceSettings settings = applied(request, plan);
  ASSERT_EQ(settings.exec_start.size(), 1U);
  const ExecCommands wrapped = parse_exec_value(settings.exec_start[0].value);
  ASSERT_EQ(wrapped.commands.size(), 1U);
  EXPECT_EQ(wrapped.commands[0].prefixes, "-");
  EXPECT_EQ(wrapped.commands[0].program, kTcptune);
  EXPECT_EQ(wrapped.commands[0].arguments, "run -q -- /usr/bin/app --listen \"a b\" $PORT");
  EXPECT_EQ(settings.notify_access.value, "all");
  EXPECT_EQ(settings.kill_mode.value, "mixed");
  // tcptune run adds the shim itself where it preloads: the unit's LD_PRELOAD is left as it is.
  EXPECT_EQ(settings.environment_entry("LD_PRELOAD")->value, "/x.so");
}

TEST(ServiceDropin, EveryCommandOfAOneshotIsWrappedOnALineOfItsOwn) {
  const DropinRequest request = request_for(
      "[Service]\nType=oneshot\nKillSignal=SIGINT\nExecStart=/bin/a ; :/bin/b $$x\nExecStart=+/bin/c\n", true);
  const DropinPlan plan = plan_dropin(request);
  ASSERT_TRUE(plan.refusal.empty()) << plan.refusal;
  const ServiceSettings settings = applied(request, plan);
  ASSERT_EQ(settings.exec_start.size(), 3U);
  EXPECT_EQ(settings.exec_start[1].value, std::string(kTcptune).insert(0, ":") + " run -q -- /bin/b $$x");
  EXPECT_EQ(parse_exec_value(settings.exec_start[2].value).commands[0].prefixes, "+");
  // SIGINT is not passed on by tcptune run: the stop signal keeps going to the whole group.
  EXPECT_TRUE(settings.kill_mode.value.empty());
  EXPECT_TRUE(settings.notify_access.value.empty());
}

TEST(ServiceDropin, RefusesWhatWrappingCannotKeep) {
  EXPECT_NE(plan_dropin(request_for("[Service]\nType=forking\nExecStart=/bin/a\n", true)).refusal.find("forking"),
            std::string::npos);
  EXPECT_NE(plan_dropin(request_for("[Service]\nExecStart=@/bin/a a-name\n", true)).refusal.find("argv[0]"),
            std::string::npos);
  EXPECT_NE(plan_dropin(request_for("[Service]\nExecStart=\n")).refusal.find("no ExecStart"), std::string::npos);
  // A dynamic program under Type=forking is preloaded: nothing to wrap.
  EXPECT_TRUE(plan_dropin(request_for("[Service]\nType=forking\nExecStart=/bin/a\n")).refusal.empty());
}

TEST(ServiceDropin, AnLdPreloadTheDropinCannotReplaceMeansWrapping) {
  DropinRequest from_file = request_for("[Service]\nExecStart=/bin/a\nEnvironmentFile=/etc/default/a\n");
  from_file.preload_files.emplace_back("/etc/default/a");
  EXPECT_TRUE(plan_dropin(from_file).wraps);
  EXPECT_TRUE(plan_dropin(request_for("[Service]\nExecStart=/bin/a\nUnsetEnvironment=LD_PRELOAD\n")).wraps);
  DropinRequest supervise = request_for("[Service]\nExecStart=/bin/a\n");
  supervise.supervise = true;
  const DropinPlan plan = plan_dropin(supervise);
  EXPECT_NE(applied(supervise, plan).exec_start[0].value.find("run -q --supervise -- /bin/a"), std::string::npos);
}

// enable again reads back what the drop-in was written with, so that the refresh keeps it.
TEST(ServiceDropin, ItsChoicesReadBackFromItsText) {
  DropinRequest chosen = request_for("[Service]\nExecStart=-/bin/a --flag\n");
  chosen.supervise = true;
  chosen.policy = "/etc/tcptune/100%/a b.toml";
  const DropinChoices read = dropin_choices(plan_dropin(chosen).text);
  EXPECT_TRUE(read.supervise);
  EXPECT_EQ(read.policy, "/etc/tcptune/100%/a b.toml");

  // A static program is wrapped without --supervise; a program's own --supervise argument is not ours.
  const DropinChoices wrapped =
      dropin_choices(plan_dropin(request_for("[Service]\nExecStart=/bin/a --supervise\n", true)).text);
  EXPECT_FALSE(wrapped.supervise);
  EXPECT_TRUE(wrapped.policy.empty());
  EXPECT_FALSE(dropin_choices(plan_dropin(request_for("[Service]\nExecStart=/bin/a\n")).text).supervise);
}

// The commands the drop-in's comments give, pasted into a shell, name the unit.
TEST(ServiceDropin, CommentsQuoteAnEscapedUnitNameForTheShell) {
  DropinRequest request = request_for("[Service]\nExecStart=/bin/a\n");
  std::string problem;
  request.unit = *parse_service_unit_name("a-b\\x2dc.service", problem);
  const std::string text = plan_dropin(request).text;
  EXPECT_NE(text.find("tcptune disable 'a-b\\x2dc.service' removes it"), std::string::npos) << text;
  EXPECT_NE(text.find("run tcptune enable 'a-b\\x2dc.service' again"), std::string::npos) << text;
}

}  // namespace
}  // namespace tcptune::cli
