#include "prometheus_api.hpp"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>

#include <nlohmann/json.hpp>

namespace tcptune::cli {

namespace {

// A sample's value: the API writes it as a string ("1.5", "NaN", "+Inf").
std::optional<double> sample_value(const nlohmann::json& text) {
  if (!text.is_string()) {
    return std::nullopt;
  }
  const std::string& value = text.get_ref<const std::string&>();
  if (value == "NaN") {
    return std::numeric_limits<double>::quiet_NaN();
  }
  if (value == "+Inf" || value == "Inf") {
    return std::numeric_limits<double>::infinity();
  }
  if (value == "-Inf") {
    return -std::numeric_limits<double>::infinity();
  }
  char* end = nullptr;
  const double number = std::strtod(value.c_str(), &end);
  if (value.empty() || end != value.c_str() + value.size()) {
    return std::nullopt;
  }
  return number;
}

// [time, "value"]
std::optional<std::pair<double, double>> point_of(const nlohmann::json& pair) {
  if (!pair.is_array() || pair.size() != 2 || !pair[0].is_number()) {
    return std::nullopt;
  }
  const std::optional<double> value = sample_value(pair[1]);
  if (!value) {
    return std::nullopt;
  }
  return std::pair{pair[0].get<double>(), *value};
}

// A member that should be a string, or `fallback` when it is absent or of another type (json::value
// would throw for a number where a string belongs).
std::string string_member(const nlohmann::json& object, const char* key, const std::string& fallback) {
  const auto found = object.find(key);
  return found != object.end() && found->is_string() ? found->get<std::string>() : fallback;
}

// An answer's body on one line: its start, line ends as spaces, other control bytes as '?' (a NUL
// would end the message), no trailing blank.
std::string shortened(const std::string& text) {
  std::string line = text.substr(0, 200);
  for (char& c : line) {
    const auto byte = static_cast<unsigned char>(c);
    c = c == '\n' || c == '\r' || c == '\t' ? ' ' : byte < 0x20 || byte == 0x7f ? '?' : c;
  }
  line.erase(line.find_last_not_of(' ') + 1);
  return line + (text.size() > 200 ? "..." : "");
}

}  // namespace

std::optional<std::vector<PromSeries>> parse_query_answer(int status, const std::string& body, std::string& error) {
  const nlohmann::json answer = nlohmann::json::parse(body, nullptr, false);
  if (answer.is_discarded() || !answer.is_object() || string_member(answer, "status", "").empty()) {
    error = status / 100 != 2 ? "HTTP " + std::to_string(status) + (body.empty() ? "" : ": " + shortened(body))
                              : "the answer is not Prometheus's API JSON: " + shortened(body);
    return std::nullopt;
  }
  if (string_member(answer, "status", "") != "success") {
    error = "Prometheus refused the query (" + string_member(answer, "errorType", "error") +
            (status / 100 != 2 ? ", HTTP " + std::to_string(status) : "") +
            "): " + string_member(answer, "error", "no reason given");
    return std::nullopt;
  }
  const nlohmann::json* data = answer.contains("data") ? &answer["data"] : nullptr;
  if (data == nullptr || !data->is_object() || !data->contains("resultType") || !data->contains("result")) {
    error = "the answer has no data.resultType and data.result";
    return std::nullopt;
  }
  const std::string type = string_member(*data, "resultType", "");
  const nlohmann::json& result = (*data)["result"];
  std::vector<PromSeries> series;
  if (type == "scalar") {
    const auto point = point_of(result);
    if (!point) {
      error = "a scalar answer that is not [time, \"value\"]";
      return std::nullopt;
    }
    series.push_back({{}, {*point}});
    return series;
  }
  if ((type != "matrix" && type != "vector") || !result.is_array()) {
    error = "an answer of type '" + type + "', not a matrix or a vector";
    return std::nullopt;
  }
  for (const nlohmann::json& entry : result) {
    PromSeries& one = series.emplace_back();
    if (!entry.is_object() || !entry.contains("metric") || !entry["metric"].is_object()) {
      error = "a series without its labels (\"metric\")";
      return std::nullopt;
    }
    for (const auto& [name, value] : entry["metric"].items()) {
      if (!value.is_string()) {
        error = "label " + name + " is not a string";
        return std::nullopt;
      }
      one.labels[name] = value.get<std::string>();
    }
    if (type == "vector") {
      const auto point = entry.contains("value") ? point_of(entry["value"]) : std::nullopt;
      if (!point) {
        error = "a vector sample that is not [time, \"value\"]";
        return std::nullopt;
      }
      one.points.push_back(*point);
      continue;
    }
    if (!entry.contains("values") || !entry["values"].is_array()) {
      error = "a matrix series without values";
      return std::nullopt;
    }
    for (const nlohmann::json& pair : entry["values"]) {
      const auto point = point_of(pair);
      if (!point) {
        error = "a matrix sample that is not [time, \"value\"]";
        return std::nullopt;
      }
      one.points.push_back(*point);
    }
  }
  return series;
}

std::string promql_string(const std::string& value) {
  std::string out = "\"";
  for (const char c : value) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string api_seconds(double seconds) {
  char text[40];
  (void)std::snprintf(text, sizeof text, "%.3f", seconds);
  std::string out = text;
  while (out.back() == '0') {
    out.pop_back();
  }
  if (out.back() == '.') {
    out.pop_back();
  }
  return out;
}

std::optional<std::vector<PromSeries>> PrometheusApi::get(const std::string& path_and_query,
                                                          const std::string& expression, std::string& error) const {
  const std::optional<HttpResponse> response = http_get(url_, path_and_query, timeout_, error);
  if (!response) {
    error = "no answer from Prometheus at " + url_text(url_) + ": " + error;
    return std::nullopt;
  }
  auto series = parse_query_answer(response->status, response->body, error);
  if (!series) {
    error = url_text(url_) + ": " + error + " (query: " + expression + ")";
  }
  return series;
}

std::optional<std::vector<PromSeries>> PrometheusApi::query_range(const std::string& expression, double start,
                                                                  double end, double step_s, std::string& error) const {
  return get("/api/v1/query_range?query=" + url_encoded(expression) + "&start=" + api_seconds(start) +
                 "&end=" + api_seconds(end) + "&step=" + api_seconds(step_s),
             expression, error);
}

std::optional<std::vector<PromSeries>> PrometheusApi::query(const std::string& expression, double time,
                                                            std::string& error) const {
  return get("/api/v1/query?query=" + url_encoded(expression) + "&time=" + api_seconds(time), expression, error);
}

}  // namespace tcptune::cli
