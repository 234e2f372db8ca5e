#include "report_json.hpp"

#include <cmath>

namespace tcptune::cli {

namespace {

double rounded(double value, double scale) {
  return std::round(value * scale) / scale;
}

nlohmann::ordered_json latency_json(const MergedHistogram& histogram) {
  return {{"p50", rounded(histogram.percentile_us(50), 1000)},
          {"p90", rounded(histogram.percentile_us(90), 1000)},
          {"p99", rounded(histogram.percentile_us(99), 1000)},
          {"p999", rounded(histogram.percentile_us(99.9), 1000)},
          {"max", rounded(histogram.max_us, 1000)}};
}

nlohmann::ordered_json group_json(const std::string& key, const ConnectionGroup& group) {
  nlohmann::ordered_json json = {{"key", key},
                                 {"connections", group.connections},
                                 {"writes_unmeasured_connections", group.unmeasured},
                                 {"connections_without_record", group.without_record}};
  for (const telemetry::CounterField& field : telemetry::kCounterFields) {
    json[field.record_field] = group.counters.*field.member;
  }
  json["write_latency_us"] = latency_json(group.write_latency);
  json["ack_latency_us"] = latency_json(group.ack_latency);
  return json;
}

}  // namespace

nlohmann::ordered_json summary_json(const LogSummary& summary, const std::string& by) {
  nlohmann::ordered_json groups = nlohmann::ordered_json::array();
  for (const auto& [key, group] : summary.groups) {
    groups.push_back(group_json(key, group));
  }
  return {{"by", by},
          {"groups", std::move(groups)},
          {"total", group_json("total", summary.total)},
          {"records", summary.records},
          {"skipped_lines", summary.skipped_lines},
          {"uncounted_dropped_records", summary.uncounted_dropped_records}};
}

nlohmann::ordered_json callsites_json(const std::vector<std::pair<std::string, SlowWriteSite>>& sites,
                                      std::uint64_t without_callsite) {
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const auto& [callsite, site] : sites) {
    list.push_back({{"callsite", callsite},
                    {"slow_writes", site.writes},
                    {"total_us", rounded(site.total_us, 10)},
                    {"max_us", rounded(site.max_us, 10)}});
  }
  return {{"by", "callsite"}, {"sites", std::move(list)}, {"slow_writes_without_callsite", without_callsite}};
}

std::string to_json_line(const nlohmann::ordered_json& value) {
  return value.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

}  // namespace tcptune::cli
