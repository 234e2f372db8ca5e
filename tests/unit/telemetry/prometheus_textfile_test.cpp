// The textfile's families: all of them from the preloaded shim, and from the supervisor only
// those it can count without the program's writes.
#include "prometheus_textfile.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace tcptune::telemetry {
namespace {

std::vector<MetricsRow> one_row() {
  MetricsRow row;
  row.rule = "wan \"east\"";
  row.connections = 3;
  row.counters.writes = 5;
  row.counters.idle_restarts = 2;
  row.write_latency.record(4'000);
  return {row};
}

MetricsContext context(MetricsSource source) {
  MetricsContext out;
  out.program = "probe";
  out.source = source;
  out.dropped_records = 1;
  out.keep_warm_rules = {"warm"};
  out.option_misses = {{"wan \"east\"", "congestion", "unavailable", 2}};
  return out;
}

TEST(PrometheusTextfile, TheShimExportsEveryFamily) {
  const std::string text = render_prometheus(one_row(), context(MetricsSource::preloaded_shim));
  for (const char* family :
       {"tcptune_connections_total", "tcptune_writes_total", "tcptune_write_bytes_total", "tcptune_idle_restarts_total",
        "tcptune_heartbeats_total", "tcptune_write_latency_seconds", "tcptune_ack_latency_seconds",
        "tcptune_dropped_records_total", "tcptune_processes", "tcptune_rule_keeps_warm",
        "tcptune_options_not_as_requested_total", "tcptune_acks_before_first_poll_total"}) {
    EXPECT_NE(text.find(std::string("# TYPE ") + family + " "), std::string::npos) << family;
  }
  EXPECT_NE(text.find("tcptune_processes{program=\"probe\"} 1\n"), std::string::npos);
  EXPECT_NE(text.find("tcptune_rule_keeps_warm{program=\"probe\",rule=\"warm\"} 1\n"), std::string::npos);
  EXPECT_NE(text.find("tcptune_options_not_as_requested_total{program=\"probe\",rule=\"wan \\\"east\\\"\","
                      "option=\"congestion\",outcome=\"unavailable\"} 2\n"),
            std::string::npos);
  EXPECT_NE(text.find("tcptune_connections_total{program=\"probe\",rule=\"wan \\\"east\\\"\"} 3\n"), std::string::npos);
  EXPECT_NE(text.find("tcptune_writes_total{program=\"probe\",rule=\"wan \\\"east\\\"\"} 5\n"), std::string::npos);
}

TEST(PrometheusTextfile, AnArmLabelsEverySeries) {
  MetricsContext with_arm = context(MetricsSource::preloaded_shim);
  with_arm.arm = "on";
  with_arm.log_on_stderr = true;
  std::vector<MetricsRow> rows = one_row();
  rows[0].acks.acked_before_first_poll = 4;
  const std::string text = render_prometheus(rows, with_arm);
  std::istringstream lines(text);
  std::string line;
  int samples = 0;
  while (std::getline(lines, line)) {
    if (line.empty() || line[0] == '#') {
      continue;
    }
    ++samples;
    EXPECT_NE(line.find("{program=\"probe\",arm=\"on\""), std::string::npos) << line;
  }
  EXPECT_GT(samples, 50);
  EXPECT_NE(
      text.find("tcptune_acks_before_first_poll_total{program=\"probe\",arm=\"on\",rule=\"wan \\\"east\\\"\"} 4\n"),
      std::string::npos)
      << text;
  // Without an arm, no label: the series of earlier versions stay as they were.
  EXPECT_EQ(render_prometheus(rows, context(MetricsSource::preloaded_shim)).find("arm="), std::string::npos);
}

TEST(PrometheusTextfile, TheSupervisorLeavesOutWhatNeedsTheWrites) {
  const std::string text = render_prometheus(one_row(), context(MetricsSource::supervisor));
  for (const char* family : {"tcptune_writes_total", "tcptune_write_bytes_total", "tcptune_heartbeats_total",
                             "tcptune_write_latency_seconds", "tcptune_ack_latency_seconds", "tcptune_rule_keeps_warm",
                             "tcptune_acks_before_first_poll_total"}) {
    EXPECT_EQ(text.find(family), std::string::npos) << family;
  }
  EXPECT_NE(text.find("tcptune_processes{program=\"probe\"} 1\n"), std::string::npos);
  EXPECT_NE(text.find("tcptune_connections_total{program=\"probe\",rule=\"wan \\\"east\\\"\"} 3\n"), std::string::npos);
  EXPECT_NE(text.find("tcptune_idle_restarts_total{program=\"probe\",rule=\"wan \\\"east\\\"\"} 2\n"),
            std::string::npos);
  EXPECT_NE(text.find("tcptune_dropped_records_total{program=\"probe\"} 1\n"), std::string::npos);
}

TEST(PrometheusTextfile, WrittenWholeThroughARename) {
  const std::string path = "/tmp/tcptune-textfile-test-" + std::to_string(getpid()) + ".prom";
  EXPECT_EQ(write_file_atomically(path, "a_total 1\n"), "");
  std::ifstream in(path);
  std::stringstream read;
  read << in.rdbuf();
  EXPECT_EQ(read.str(), "a_total 1\n");
  EXPECT_NE(access((path + ".tmp." + std::to_string(getpid())).c_str(), F_OK), 0) << "no temporary is left";
  (void)std::remove(path.c_str());
  EXPECT_NE(write_file_atomically("/nonexistent-dir/x.prom", "a_total 1\n").find("cannot write"), std::string::npos);
}

}  // namespace
}  // namespace tcptune::telemetry
