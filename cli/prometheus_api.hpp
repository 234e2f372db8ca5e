// Prometheus's HTTP API as `tcptune ab --prometheus` uses it: instant and range queries
// (/api/v1/query, /api/v1/query_range), their JSON answers read with nlohmann-json into series,
// and every way a query can fail said in one line: no answer, an HTTP error, Prometheus
// refusing the query (its errorType and error), an answer that is not the API's JSON.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "http_get.hpp"

namespace tcptune::cli {

struct PromSeries {
  std::map<std::string, std::string> labels;
  std::vector<std::pair<double, double>> points;  // (Unix time in s, value); NaN and ±Inf as Prometheus gives them
};

// The series of a query's answer (`status`, `body` as HTTP gave them): a "matrix" (query_range)
// or a "vector" (query; one point per series); a "scalar" is one series without labels. nullopt
// with `error` for an error answer or one that is not the API's JSON.
std::optional<std::vector<PromSeries>> parse_query_answer(int status, const std::string& body, std::string& error);

class PrometheusApi {
 public:
  PrometheusApi(HttpUrl url, std::chrono::milliseconds timeout) : url_(std::move(url)), timeout_(timeout) {}

  // /api/v1/query_range from `start` to `end` (Unix s) every `step_s`.
  std::optional<std::vector<PromSeries>> query_range(const std::string& expression, double start, double end,
                                                     double step_s, std::string& error) const;
  // /api/v1/query at `time` (Unix s).
  std::optional<std::vector<PromSeries>> query(const std::string& expression, double time, std::string& error) const;

  [[nodiscard]] const HttpUrl& url() const { return url_; }

 private:
  std::optional<std::vector<PromSeries>> get(const std::string& path_and_query, const std::string& expression,
                                             std::string& error) const;
  HttpUrl url_;
  std::chrono::milliseconds timeout_;
};

// A label value inside PromQL's double quotes.
std::string promql_string(const std::string& value);
// A time or duration in seconds as the API takes it ("1700000000.5", "60").
std::string api_seconds(double seconds);

}  // namespace tcptune::cli
