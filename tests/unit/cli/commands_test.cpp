// The commands that need no program run: check, doctor and report, their output captured.
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "commands.hpp"
#include "log_file.hpp"
#include "log_record.hpp"

namespace tcptune::cli {
namespace {

using ::testing::internal::CaptureStderr;
using ::testing::internal::CaptureStdout;
using ::testing::internal::GetCapturedStderr;
using ::testing::internal::GetCapturedStdout;

constexpr const char* kFixture = TCPTUNE_SOURCE_DIR "/tests/cli/fixtures/probe-two-runs.jsonl";

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(CheckCommand, ExplainsAPolicy) {
  const TempLog policy(
      "[defaults]\nnodelay = \"on\"\n[[rule]]\nname = \"wan\"\n"
      "match = { peer = [\"203.0.113.0/24\"], port = [443, \"8000-8100\"], role = \"client\" }\n"
      "nodelay = \"force\"\nbuffers = { bandwidth = \"1Gbit\", rtt = \"180ms\" }\n");
  CaptureStdout();
  CaptureStderr();
  const int status = check_command({policy.path()});
  const std::string out = GetCapturedStdout();
  const std::string err = GetCapturedStderr();
  EXPECT_EQ(status, 0) << err;
  EXPECT_TRUE(has(out, policy.path() + ": valid, 1 rule (first match wins")) << out;
  EXPECT_TRUE(has(out, "rule 'wan'")) << out;
  EXPECT_TRUE(has(out, "client connections to 203.0.113.0/24, port 443 or 8000-8100")) << out;
  EXPECT_TRUE(has(out, "= 22.5 MB (bandwidth-delay product)")) << out;
  EXPECT_TRUE(has(out, "nodelay: force")) << out;
  EXPECT_TRUE(has(out, "[defaults], for sockets no rule matches:\n  nodelay: on")) << out;
  EXPECT_EQ(err, "");
}

TEST(CheckCommand, WarnsWhenAHeartbeatReachesAcceptedSockets) {
  const TempLog policy("[defaults]\nkeep_warm = { heartbeat = \"\\n\" }\n");
  CaptureStdout();
  CaptureStderr();
  EXPECT_EQ(check_command({policy.path()}), 0);
  (void)GetCapturedStdout();
  const std::string err = GetCapturedStderr();
  EXPECT_TRUE(has(err, "tcptune: warning: " + policy.path() + ": [defaults] has keep_warm")) << err;
}

TEST(CheckCommand, AnInvalidPolicyIsOneLineAndExitOne) {
  const TempLog policy("nodelay = 3\n");
  CaptureStdout();
  CaptureStderr();
  EXPECT_EQ(check_command({policy.path()}), 1);
  EXPECT_EQ(GetCapturedStdout(), "");
  const std::string err = GetCapturedStderr();
  EXPECT_EQ(err.rfind("tcptune: " + policy.path() + ":", 0), 0U) << err;
  EXPECT_EQ(err.find('\n'), err.size() - 1) << err;
}

TEST(DoctorCommand, ReportsThisNamespacesSettings) {
  std::ifstream in("/proc/sys/net/ipv4/tcp_slow_start_after_idle");
  std::string idle;
  in >> idle;
  CaptureStdout();
  EXPECT_EQ(doctor_command(), 0);
  const std::string out = GetCapturedStdout();
  EXPECT_TRUE(has(out, "net.ipv4.tcp_slow_start_after_idle")) << out;
  const std::string line = out.substr(out.find("net.ipv4.tcp_slow_start_after_idle"));
  EXPECT_EQ(line.substr(41, idle.size()), idle) << line.substr(0, line.find('\n'));
  EXPECT_TRUE(has(out, "policy the shim would load")) << out;
}

TEST(ReportCommand, TableOfTheFixture) {
  CaptureStdout();
  EXPECT_EQ(report_command({{kFixture}, "rule", false}), 0);
  const std::string out = GetCapturedStdout();
  EXPECT_TRUE(has(out, "(latencies in microseconds)\nrule ")) << out;
  EXPECT_TRUE(has(out, "\n(defaults)                3      407 ")) << out;
  EXPECT_TRUE(has(out, "from 1 file(s); 1 line(s) skipped (not JSON: a text log, or a line cut by kill -9)\n")) << out;
}

TEST(ReportCommand, JsonByProgram) {
  CaptureStdout();
  EXPECT_EQ(report_command({{kFixture}, "program", true}), 0);
  const std::string out = GetCapturedStdout();
  ASSERT_EQ(out.find('\n'), out.size() - 1) << out;  // one line
  const auto report = parse_log_record(out);
  ASSERT_TRUE(report.has_value()) << out;
  EXPECT_EQ((*report)["by"], "program");
  EXPECT_EQ((*report)["groups"][0]["key"], "probe");
  EXPECT_EQ((*report)["total"]["bytes"], 661000);
  EXPECT_EQ((*report)["skipped_lines"], 1);
}

TEST(ReportCommand, CallSitesCostliestFirst) {
  const TempLog log(R"({"event":"slow_write","duration_us":5000,"callsite":["a","b"]})"
                    "\n"
                    R"({"event":"slow_write","duration_us":7000,"callsite":["a","b"]})"
                    "\n"
                    R"({"event":"slow_write","duration_us":90000,"callsite":["c"]})"
                    "\n"
                    R"({"event":"slow_write","duration_us":4000})"
                    "\n");
  CaptureStdout();
  EXPECT_EQ(report_command({{log.path()}, "callsite", false}), 0);
  const std::string out = GetCapturedStdout();
  EXPECT_LT(out.find("  c\n"), out.find("  a < b\n")) << out;
  EXPECT_TRUE(has(out, "           2         12.0          7.0  a < b\n")) << out;
  EXPECT_TRUE(has(out, "1 slow write(s) without a call site")) << out;
}

TEST(ReportCommand, AMissingLogIsExitOne) {
  CaptureStderr();
  EXPECT_EQ(report_command({{"/nonexistent.jsonl"}, "rule", false}), 1);
  EXPECT_EQ(GetCapturedStderr(), "tcptune report: cannot read /nonexistent.jsonl: No such file or directory\n");
}

}  // namespace
}  // namespace tcptune::cli
