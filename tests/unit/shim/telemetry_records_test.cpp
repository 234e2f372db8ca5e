// The records the worker writes, from known inputs: the summary carries every counter, its
// by_rule entries the exported ones, and a write record says how the write ended.
#include "telemetry_records.hpp"

#include <gtest/gtest.h>

#include <cerrno>
#include <string>

#include "tcptune/config/policy_loader.hpp"

namespace tcptune::shim {
namespace {

config::Policy two_rules() {
  auto loaded = config::load_policy_text(
      "[[rule]]\nname = \"wan\"\nmatch = { port = 443 }\nnodelay = \"on\"\n"
      "[[rule]]\nname = \"lan\"\nmatch = { port = 80 }\nnodelay = \"on\"\n",
      "test.toml");
  EXPECT_TRUE(loaded.ok());
  return loaded.policy();
}

TEST(TelemetryRecords, SummaryCarriesEveryCounterAndByRuleTheExportedOnes) {
  const config::Policy policy = two_rules();
  ConnectionTotals totals(policy.rules.size());
  ConnectionSnapshot snapshot;
  snapshot.rule_index = 0;
  for (const telemetry::CounterField& field : telemetry::kCounterFields) {
    snapshot.counters.*field.member = 7;
  }
  totals.add_closed(snapshot, telemetry::AckLatency{});
  const telemetry::Record record = summary_record(totals, policy, {.dropped_records = 2});
  const std::string json = record.json_fields();
  EXPECT_NE(json.find("\"connections\":1"), std::string::npos) << json;
  for (const telemetry::CounterField& field : telemetry::kCounterFields) {
    EXPECT_NE(json.find("\"" + std::string(field.record_field) + "\":7"), std::string::npos) << field.record_field;
  }
  EXPECT_NE(json.find("\"dropped_records\":2"), std::string::npos);
  const std::string by_rule = json.substr(json.find("\"by_rule\""));
  EXPECT_NE(by_rule.find("\"rule\":\"wan\""), std::string::npos) << by_rule;
  EXPECT_EQ(by_rule.find("\"lan\""), std::string::npos) << "rules without connections are left out";
  for (const telemetry::CounterField& field : telemetry::kCounterFields) {
    const bool in_entry = by_rule.find("\"" + std::string(field.record_field) + "\":7") != std::string::npos;
    EXPECT_EQ(in_entry, field.prometheus_name != nullptr) << field.record_field;
  }
}

TEST(TelemetryRecords, WriteRecordSaysHowTheWriteEnded) {
  const config::Policy policy = two_rules();
  WriteEvent write;
  write.fd = 5;
  write.rule_index = 1;
  write.offered = 100;
  write.result = 40;
  EXPECT_NE(write_record(write, policy).json_fields().find("\"outcome\":\"partial\""), std::string::npos);
  write.result = -1;
  write.error = EAGAIN;
  EXPECT_NE(write_record(write, policy).json_fields().find("\"outcome\":\"eagain\""), std::string::npos);
  write.error = EPIPE;
  const std::string failed = write_record(write, policy).json_fields();
  EXPECT_NE(failed.find("\"outcome\":\"error\""), std::string::npos);
  EXPECT_NE(failed.find("\"errno\":" + std::to_string(EPIPE)), std::string::npos);
  EXPECT_NE(failed.find("\"rule\":\"lan\""), std::string::npos);
  write.slow = true;
  EXPECT_EQ(write_record(write, policy).event(), "slow_write");
}

}  // namespace
}  // namespace tcptune::shim
