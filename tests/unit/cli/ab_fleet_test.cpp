// tcptune ab --prometheus, without a Prometheus: the URL, the HTTP answer and the API's JSON
// read strictly; the per-step percentiles as histogram_quantile computes them; DNS messages;
// and the command against a loopback server that answers as Prometheus would, or does not:
// every failure is one line on stderr and a non-zero exit.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "ab_fleet.hpp"
#include "fleet_steps.hpp"
#include "host_lookup.hpp"
#include "http_get.hpp"
#include "observing_cost.hpp"
#include "prometheus_api.hpp"

namespace tcptune::cli {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

TEST(HttpUrl, WhatIsAndIsNotAPrometheusAddress) {
  std::string problem;
  auto url = parse_http_url("http://127.0.0.1:9090", problem);
  ASSERT_TRUE(url) << problem;
  EXPECT_EQ(url->host, "127.0.0.1");
  EXPECT_EQ(url->port, 9090);
  EXPECT_EQ(url->path, "");
  url = parse_http_url("http://[::1]:9090/prometheus/", problem);
  ASSERT_TRUE(url) << problem;
  EXPECT_EQ(url->host, "::1");
  EXPECT_EQ(url->path, "/prometheus");
  EXPECT_EQ(url_text(*url), "http://[::1]:9090/prometheus");
  url = parse_http_url("http://prometheus.monitoring.svc", problem);
  ASSERT_TRUE(url) << problem;
  EXPECT_EQ(url->port, 80);
  for (const char* bad : {"https://127.0.0.1:9090", "127.0.0.1:9090", "http://:9090", "http://h:0", "http://h:70000",
                          "http://h:x", "http://u:p@h:9090", "http://h:9090/?q=1", "http://[::1"}) {
    problem.clear();
    EXPECT_FALSE(parse_http_url(bad, problem)) << bad;
    EXPECT_NE(problem, "") << bad;
    EXPECT_EQ(problem.find('\n'), std::string::npos) << bad;
  }
  (void)parse_http_url("https://x:9090", problem);
  EXPECT_NE(problem.find("port-forward"), std::string::npos) << problem;
}

TEST(HttpResponse, LengthChunkedAndCutShort) {
  std::string error;
  auto response = parse_http_response("HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nbody", error);
  ASSERT_TRUE(response) << error;
  EXPECT_EQ(response->status, 200);
  EXPECT_EQ(response->reason, "OK");
  EXPECT_EQ(response->body, "body");
  response = parse_http_response(
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nWiki\r\n5;x=y\r\npedia\r\n0\r\n\r\n", error);
  ASSERT_TRUE(response) << error;
  EXPECT_EQ(response->body, "Wikipedia");
  response = parse_http_response("HTTP/1.0 404 Not Found\r\n\r\nno such page", error);
  ASSERT_TRUE(response) << error;
  EXPECT_EQ(response->status, 404);
  EXPECT_EQ(response->body, "no such page");
  EXPECT_FALSE(parse_http_response("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort", error));
  EXPECT_NE(error.find("cut short"), std::string::npos) << error;
  EXPECT_FALSE(parse_http_response("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nWi", error));
  EXPECT_FALSE(parse_http_response("SSH-2.0-OpenSSH\r\n\r\n", error));
  EXPECT_FALSE(parse_http_response("", error));
  EXPECT_NE(error.find("without answering"), std::string::npos) << error;
}

TEST(HttpGet, UrlEncodingOfAQuery) {
  EXPECT_EQ(url_encoded("sum by (le) (x{a=\"b\"}[5m])"), "sum%20by%20%28le%29%20%28x%7Ba%3D%22b%22%7D%5B5m%5D%29");
  EXPECT_EQ(url_encoded("a-b_c.d~"), "a-b_c.d~");
}

TEST(PrometheusAnswer, MatrixVectorScalar) {
  std::string error;
  auto series = parse_query_answer(200, R"({"status":"success","data":{"resultType":"matrix","result":[
      {"metric":{"le":"0.001"},"values":[[1700000000,"3"],[1700000010.5,"NaN"]]},
      {"metric":{"le":"+Inf"},"values":[[1700000000,"4.5"],[1700000010.5,"+Inf"]]}]}})",
                                   error);
  ASSERT_TRUE(series) << error;
  ASSERT_EQ(series->size(), 2U);
  EXPECT_EQ((*series)[0].labels.at("le"), "0.001");
  ASSERT_EQ((*series)[0].points.size(), 2U);
  EXPECT_DOUBLE_EQ((*series)[0].points[0].first, 1700000000);
  EXPECT_DOUBLE_EQ((*series)[0].points[0].second, 3);
  EXPECT_TRUE(std::isnan((*series)[0].points[1].second));
  EXPECT_TRUE(std::isinf((*series)[1].points[1].second));
  series = parse_query_answer(
      200, R"({"status":"success","data":{"resultType":"vector","result":[{"metric":{"arm":"on"},"value":[1,"2"]}]}})",
      error);
  ASSERT_TRUE(series) << error;
  EXPECT_EQ((*series)[0].labels.at("arm"), "on");
  EXPECT_DOUBLE_EQ((*series)[0].points.at(0).second, 2);
  series = parse_query_answer(200, R"({"status":"success","data":{"resultType":"scalar","result":[1,"7"]}})", error);
  ASSERT_TRUE(series) << error;
  EXPECT_DOUBLE_EQ((*series)[0].points.at(0).second, 7);
  series = parse_query_answer(200, R"({"status":"success","data":{"resultType":"matrix","result":[]}})", error);
  ASSERT_TRUE(series) << error;
  EXPECT_TRUE(series->empty()) << "an empty result is a result";
}

TEST(PrometheusAnswer, ErrorsSayWhatWentWrong) {
  std::string error;
  EXPECT_FALSE(parse_query_answer(
      400, R"({"status":"error","errorType":"bad_data","error":"1:5: parse error: unexpected \"}\""})", error));
  EXPECT_EQ(error, "Prometheus refused the query (bad_data, HTTP 400): 1:5: parse error: unexpected \"}\"");
  EXPECT_FALSE(parse_query_answer(404, "404 page not found\n", error));
  EXPECT_EQ(error, "HTTP 404: 404 page not found");
  EXPECT_FALSE(parse_query_answer(200, "<html>a login page</html>", error));
  EXPECT_EQ(error.rfind("the answer is not Prometheus's API JSON", 0), 0U) << error;
  EXPECT_FALSE(parse_query_answer(200, R"({"status":"success","data":{"resultType":"streams","result":[]}})", error));
  EXPECT_FALSE(parse_query_answer(200, R"({"status":"success","data":{"resultType":"matrix","result":[
      {"metric":{"a":"b"},"values":[[1,2]]}]}})",
                                  error))
      << "a value must be a string";
  EXPECT_FALSE(parse_query_answer(200, R"({"status":"success"})", error));
}

// A member of another JSON type than the API's is a wrong answer, said as such, not an exception.
TEST(PrometheusAnswer, MembersOfTheWrongTypeSayWhatWentWrong) {
  std::string error;
  EXPECT_FALSE(parse_query_answer(200, R"({"status":1})", error));
  EXPECT_EQ(error, "the answer is not Prometheus's API JSON: {\"status\":1}");
  EXPECT_FALSE(parse_query_answer(400, R"({"status":"error","errorType":5,"error":["x"]})", error));
  EXPECT_EQ(error, "Prometheus refused the query (error, HTTP 400): no reason given");
  EXPECT_FALSE(parse_query_answer(200, R"({"status":"success","data":{"resultType":5,"result":[]}})", error));
  EXPECT_EQ(error, "an answer of type '', not a matrix or a vector");
  EXPECT_FALSE(parse_query_answer(200, std::string("\0\xff\x01garbage", 10), error));
  EXPECT_EQ(error, "the answer is not Prometheus's API JSON: ?\xff?garbage");
}

TEST(FleetSteps, QuantileAsHistogramQuantile) {
  // 10 in (0, 1], 30 in (1, 2], 60 in (2, 4]: cumulative 10, 40, 100.
  const CumulativeBuckets buckets = {{1, 10}, {2, 40}, {4, 100}, {kInf, 100}};
  EXPECT_DOUBLE_EQ(*bucket_quantile(0.05, buckets), 0.5);
  EXPECT_DOUBLE_EQ(*bucket_quantile(0.25, buckets), 1.5);
  EXPECT_DOUBLE_EQ(*bucket_quantile(0.70, buckets), 3.0);
  // Above every finite bound: the highest finite bound.
  EXPECT_DOUBLE_EQ(*bucket_quantile(0.99, {{1, 10}, {2, 40}, {kInf, 100}}), 2.0);
  // Extrapolated increases need not be monotonic: made so first.
  // (9 read as 10: without that, 2 + 2 * 6/11.)
  EXPECT_DOUBLE_EQ(*bucket_quantile(0.75, {{1, 10}, {2, 9}, {4, 20}, {kInf, 20}}), 3.0);
  EXPECT_FALSE(bucket_quantile(0.5, {{1, 0}, {kInf, 0}})) << "no count: no value";
  EXPECT_FALSE(bucket_quantile(0.5, {{1, 3}})) << "no +Inf bucket";
}

TEST(FleetSteps, AcksBelowTheResolutionRankFirst) {
  const CumulativeBuckets timed = {{0.032, 0}, {0.064, 10}, {kInf, 10}};  // ten acks timed at 32-64 ms
  auto p50 = step_percentile(50, timed, 90, 1e-3, 1);                     // and 90 before the first poll
  ASSERT_TRUE(p50);
  EXPECT_TRUE(p50->below_resolution);
  EXPECT_DOUBLE_EQ(p50->value, 1);
  auto p99 = step_percentile(99, timed, 90, 1e-3, 1);
  ASSERT_TRUE(p99);
  EXPECT_FALSE(p99->below_resolution);
  EXPECT_NEAR(p99->value, 32 + 32 * 0.9, 1e-9);
  auto none_timed = step_percentile(99, {{0.001, 0}, {kInf, 0}}, 5, 1e-3, 1);
  ASSERT_TRUE(none_timed);
  EXPECT_TRUE(none_timed->below_resolution);
  EXPECT_FALSE(step_percentile(50, {{0.001, 0}, {kInf, 0}}, 0, 1e-3, 1)) << "no sample at all";
  auto write = step_percentile(50, {{2e-6, 5}, {4e-6, 10}, {kInf, 10}}, 0, 1e-6, 0);
  ASSERT_TRUE(write);
  EXPECT_DOUBLE_EQ(write->value, 2.0);
}

TEST(FleetSteps, SeriesIntoSteps) {
  ArmSteps steps;
  add_bucket_series({{{{"le", "0.001"}}, {{10, 1}, {20, 2}}}, {{{"le", "+Inf"}}, {{10, 3}, {20, std::nan("")}}}},
                    &StepCounts::write_latency, steps);
  add_value_series({{{}, {{10, 4}, {20, 5}}}}, &StepCounts::writes, steps);
  ASSERT_EQ(steps.size(), 2U);
  EXPECT_EQ(steps[10].write_latency.size(), 2U);
  EXPECT_EQ(steps[20].write_latency.size(), 1U) << "a NaN is no count";
  EXPECT_DOUBLE_EQ(*steps[20].writes, 5);
  EXPECT_FALSE(steps[10].bytes);
  const MergedHistogram merged = merged_histogram(steps, &StepCounts::write_latency);
  ASSERT_EQ(merged.buckets.size(), 1U);
  EXPECT_EQ(merged.buckets.begin()->second, 3U) << "1 + 2 in the first bucket; the +Inf rest is not drawn";
}

TEST(FleetSteps, Autocorrelation) {
  EXPECT_FALSE(lag1_autocorrelation({1, 2, 3}));
  EXPECT_FALSE(lag1_autocorrelation({2, 2, 2, 2, 2}));
  EXPECT_GT(*lag1_autocorrelation({1, 2, 3, 4, 5, 6, 7, 8}), 0.5) << "a trend";
  EXPECT_LT(*lag1_autocorrelation({1, 9, 1, 9, 1, 9, 1, 9}), -0.5) << "alternating";
}

TEST(ObservingCost, FromTheBenchFigureAndTheArmsRates) {
  const std::string line = observing_cost_line("off", 1000, 5);
  EXPECT_NE(line.find("21-60 ns of CPU per write"), std::string::npos) << line;
  EXPECT_NE(line.find("21-60 us of CPU per second"), std::string::npos) << line;
  EXPECT_NE(line.find("0.0021-0.006% of one core"), std::string::npos) << line;
  EXPECT_NE(line.find("0.42-1.2% of its median write call (5 us)"), std::string::npos) << line;
  EXPECT_EQ(observing_cost_line("off", 0, 0).find("writes/s"), std::string::npos);
}

TEST(HostLookup, NumericHostsFileAndDnsMessages) {
  EXPECT_TRUE(numeric_address("127.0.0.1"));
  EXPECT_TRUE(numeric_address("[::1]"));
  EXPECT_FALSE(numeric_address("localhost"));
  const std::string hosts = ::testing::TempDir() + "/tcptune-hosts";
  std::ofstream(hosts) << "# comment\n127.0.0.1 localhost\n10.1.2.3  prom prom.example  # alias\n";
  std::string error;
  auto found = look_up_host("PROM.example", std::chrono::milliseconds(100), error, {hosts, "/nonexistent"});
  ASSERT_EQ(found.size(), 1U) << error;
  EXPECT_EQ(found[0].address.ss_family, AF_INET);
  EXPECT_EQ(names_to_try("prometheus", {"monitoring.svc.cluster.local", "svc.cluster.local"}, 5),
            (std::vector<std::string>{"prometheus.monitoring.svc.cluster.local", "prometheus.svc.cluster.local",
                                      "prometheus"}));
  EXPECT_EQ(names_to_try("prom.example.com", {"corp"}, 1),
            (std::vector<std::string>{"prom.example.com", "prom.example.com.corp"}));
  EXPECT_EQ(names_to_try("prom.", {"corp"}, 1), (std::vector<std::string>{"prom"}));
  // A query, and an answer built from it: the question echoed, a CNAME, then an A record.
  const std::string query = dns_query(0x1234, "prom.example", 1);
  ASSERT_FALSE(query.empty());
  EXPECT_EQ(query.size(), 12 + 14 + 4U);
  std::string answer = query;
  answer[2] = static_cast<char>(0x81);
  answer[3] = static_cast<char>(0x80);
  answer[7] = 2;                                                                          // two answers
  answer += std::string("\xc0\x0c\x00\x05\x00\x01\x00\x00\x00\x3c\x00\x02\xc0\x0c", 14);  // CNAME
  answer += std::string("\xc0\x0c\x00\x01\x00\x01\x00\x00\x00\x3c\x00\x04\x0a\x01\x02\x03", 16);
  int rcode = -1;
  found = dns_answer_addresses(answer, 0x1234, rcode);
  EXPECT_EQ(rcode, 0);
  ASSERT_EQ(found.size(), 1U);
  EXPECT_EQ(reinterpret_cast<const sockaddr_in*>(&found[0].address)->sin_addr.s_addr, htonl(0x0a010203));
  EXPECT_TRUE(dns_answer_addresses(answer, 0x9999, rcode).empty());
  EXPECT_EQ(rcode, -1) << "not an answer to this query";
  EXPECT_TRUE(dns_answer_addresses(answer.substr(0, 40), 0x1234, rcode).empty()) << "cut short";
  EXPECT_TRUE(dns_query(1, "a..b", 1).empty());
}

// A loopback HTTP server that answers each request with what `answer` gives for its target, and
// closes the connection (or, `keep_open`, keeps it as a proxy ignoring "Connection: close" may).
class FakePrometheus {
 public:
  using Answer = std::function<std::string(const std::string& target)>;
  explicit FakePrometheus(Answer answer, bool keep_open = false) : answer_(std::move(answer)), keep_open_(keep_open) {
    listener_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof address;
    EXPECT_EQ(::bind(listener_, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
    EXPECT_EQ(::listen(listener_, 16), 0);
    EXPECT_EQ(::getsockname(listener_, reinterpret_cast<sockaddr*>(&address), &length), 0);
    port_ = ntohs(address.sin_port);
    thread_ = std::thread([this] { serve(); });
  }
  ~FakePrometheus() {
    ::shutdown(listener_, SHUT_RDWR);
    ::close(listener_);
    thread_.join();
    for (const int fd : kept_) {
      ::close(fd);
    }
  }
  [[nodiscard]] std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  [[nodiscard]] int requests() const { return requests_.load(); }

  static std::string http(int status, const std::string& body) {
    return "HTTP/1.1 " + std::to_string(status) +
           " X\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
  }

 private:
  void serve() {
    for (;;) {
      const int fd = ::accept(listener_, nullptr, nullptr);
      if (fd < 0) {
        return;
      }
      std::string request;
      char buffer[4096];
      while (request.find("\r\n\r\n") == std::string::npos) {
        const ssize_t got = ::read(fd, buffer, sizeof buffer);
        if (got <= 0) {
          break;
        }
        request.append(buffer, static_cast<std::size_t>(got));
      }
      ++requests_;
      const std::size_t start = request.find(' ') + 1;
      const std::string reply = answer_(request.substr(start, request.find(' ', start) - start));
      (void)::write(fd, reply.data(), reply.size());
      if (keep_open_) {
        kept_.push_back(fd);
      } else {
        ::close(fd);
      }
    }
  }
  Answer answer_;
  bool keep_open_ = false;
  std::vector<int> kept_;
  int listener_ = -1;
  std::uint16_t port_ = 0;
  std::thread thread_;
  std::atomic<int> requests_{0};
};

struct CommandResult {
  int status = 0;
  std::string out;
  std::string err;
};

CommandResult run_fleet(const std::string& url, const std::string& out_dir, const std::string& off = "off") {
  AbOptions options;
  options.prometheus = url;
  options.window = "10m";
  options.step = "1m";
  options.end = "1700000600";
  options.off = off;
  options.out = out_dir;
  ::testing::internal::CaptureStdout();
  ::testing::internal::CaptureStderr();
  CommandResult result;
  result.status = ab_fleet_command(options);
  result.out = ::testing::internal::GetCapturedStdout();
  result.err = ::testing::internal::GetCapturedStderr();
  return result;
}

std::size_t lines_of(const std::string& text) {
  return static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n'));
}

std::string arms_answer(std::initializer_list<const char*> arms) {
  nlohmann::json result = nlohmann::json::array();
  for (const char* arm : arms) {
    result.push_back({{"metric", {{"arm", arm}}}, {"value", {1700000600, "3"}}});
  }
  return nlohmann::json{{"status", "success"}, {"data", {{"resultType", "vector"}, {"result", result}}}}.dump();
}

// A query_range answer as the shim's series would give it: per step of 60 s, for the on arm
// writes acknowledged at once, for the off arm after about 40 ms.
std::string range_answer(const std::string& target) {
  const bool on = target.find("%22on%22") != std::string::npos;
  auto matrix = [](const std::vector<std::pair<std::map<std::string, std::string>, std::function<double(int)>>>& all) {
    nlohmann::json result = nlohmann::json::array();
    for (const auto& [labels, value_at] : all) {
      nlohmann::json values = nlohmann::json::array();
      for (int step = 0; step < 10; ++step) {
        char text[32];
        (void)std::snprintf(text, sizeof text, "%.6g", value_at(step));
        values.push_back({1700000060 + 60 * step, text});
      }
      result.push_back({{"metric", labels}, {"values", values}});
    }
    return nlohmann::json{{"status", "success"}, {"data", {{"resultType", "matrix"}, {"result", result}}}}.dump();
  };
  const auto jitter = [](int step) { return 1 + 0.01 * (step % 3); };
  if (target.find("ack_latency_seconds_bucket") != std::string::npos) {
    return matrix({{{{"le", "0.032768"}}, [](int) { return 0.0; }},
                   {{{"le", "0.065536"}}, [on, jitter](int s) { return on ? 0.0 : 100 * jitter(s); }},
                   {{{"le", "+Inf"}}, [on, jitter](int s) { return on ? 0.0 : 100 * jitter(s); }}});
  }
  if (target.find("acks_before_first_poll") != std::string::npos) {
    return matrix({{{}, [on, jitter](int s) { return on ? 500 * jitter(s) : 0.0; }}});
  }
  if (target.find("write_latency_seconds_bucket") != std::string::npos) {
    return matrix({{{{"le", "4.096e-06"}}, [jitter](int s) { return 50 * jitter(s); }},
                   {{{"le", "8.192e-06"}}, [jitter](int s) { return 100 * jitter(s); }},
                   {{{"le", "+Inf"}}, [jitter](int s) { return 100 * jitter(s); }}});
  }
  if (target.find("idle_restarts") != std::string::npos || target.find("heartbeats") != std::string::npos) {
    return matrix({{{}, [](int) { return 0.0; }}});
  }
  if (target.find("tcptune_processes") != std::string::npos) {
    return matrix({{{}, [](int) { return 2.0; }}});
  }
  return matrix({{{}, [on, jitter](int s) { return (on ? 6000 : 1200) * jitter(s); }}});
}

TEST(AbFleet, TheOnArmBetterFromAnswersAsPrometheusGivesThem) {
  const FakePrometheus prometheus([](const std::string& target) {
    if (target.rfind("/api/v1/query?", 0) == 0) {
      return FakePrometheus::http(200, arms_answer({"off", "on"}));
    }
    return FakePrometheus::http(200, range_answer(target));
  });
  const std::string out = ::testing::TempDir() + "/tcptune-fleet-ab";
  const CommandResult result = run_fleet(prometheus.url(), out);
  ASSERT_EQ(result.status, 0) << result.err << result.out;
  EXPECT_NE(result.out.find("fleet A/B from " + prometheus.url() + ": 10 steps of 1m per arm"), std::string::npos)
      << result.out;
  std::ifstream json_file(out + "/summary.json");
  const nlohmann::json summary = nlohmann::json::parse(json_file);
  std::map<std::string, nlohmann::json> metrics;
  for (const nlohmann::json& metric : summary.at("metrics")) {
    metrics[metric.at("name")] = metric;
  }
  EXPECT_EQ(metrics.at("ack p50").at("verdict"), "better") << result.out;
  EXPECT_LT(metrics.at("ack p50").at("p_value").get<double>(), 0.005);
  EXPECT_EQ(metrics.at("throughput").at("verdict"), "better");
  EXPECT_EQ(metrics.at("write p50").at("verdict"), "no difference shown") << "the same buckets in both arms";
  EXPECT_EQ(metrics.at("write p50").at("advice"), "every step gave the same value in both arms: no difference to show");
  EXPECT_FALSE(metrics.at("idle restarts").contains("verdict")) << "shown, not judged";
  EXPECT_EQ(result.out.find("correlated"), std::string::npos) << "equal values are not correlated steps";
  EXPECT_EQ(summary.at("steps_per_arm"), 10);
  EXPECT_NE(summary.at("observing_cost").at("line").get<std::string>().find("ns of CPU per write"), std::string::npos);
  EXPECT_NE(result.out.find("what observing costs the off arm"), std::string::npos) << result.out;
  EXPECT_EQ(summary.at("source").at("queries").at("on").size(), 9U);
  std::ifstream html(out + "/report.html");
  std::stringstream report;
  report << html.rdbuf();
  EXPECT_NE(report.str().find("What a sample is"), std::string::npos);
}

// A server that keeps the connection open after a whole answer: each answer is taken when whole,
// not after the 60 s query timeout (the run takes well under a tenth of that).
TEST(AbFleet, AnAnswerIsTakenWhenWholeOnAConnectionLeftOpen) {
  const FakePrometheus prometheus(
      [](const std::string& target) {
        if (target.rfind("/api/v1/query?", 0) == 0) {
          return FakePrometheus::http(200, arms_answer({"off", "on"}));
        }
        const std::string body = range_answer(target);
        char size[16];
        (void)std::snprintf(size, sizeof size, "%zx", body.size() - 10);
        return "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + std::string(size) + "\r\n" +
               body.substr(0, body.size() - 10) + "\r\na\r\n" + body.substr(body.size() - 10) + "\r\n0\r\n\r\n";
      },
      /*keep_open=*/true);
  const auto start = std::chrono::steady_clock::now();
  const CommandResult result = run_fleet(prometheus.url(), ::testing::TempDir() + "/tcptune-fleet-kept-open");
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(result.status, 0) << result.err;
  EXPECT_LT(seconds, 6.0);
  EXPECT_NE(result.out.find("ack p50"), std::string::npos) << result.out;
  EXPECT_GT(prometheus.requests(), 2);
}

TEST(AbFleet, AnArmWithNoSeriesIsOneLine) {
  const FakePrometheus prometheus([](const std::string&) {
    return FakePrometheus::http(200, arms_answer({"on", "canary"}));
  });
  const CommandResult result = run_fleet(prometheus.url(), ::testing::TempDir() + "/tcptune-fleet-none");
  EXPECT_EQ(result.status, 1);
  EXPECT_EQ(lines_of(result.err), 1U) << result.err;
  EXPECT_NE(result.err.find("no tcptune series with arm=\"off\""), std::string::npos) << result.err;
  EXPECT_NE(result.err.find("(arms found: canary, on)"), std::string::npos) << result.err;
  EXPECT_EQ(result.out, "");
}

TEST(AbFleet, AnEmptyResultIsOneLine) {
  const FakePrometheus prometheus([](const std::string&) { return FakePrometheus::http(200, arms_answer({})); });
  const CommandResult result = run_fleet(prometheus.url(), ::testing::TempDir() + "/tcptune-fleet-empty");
  EXPECT_EQ(result.status, 1);
  EXPECT_EQ(lines_of(result.err), 1U) << result.err;
  EXPECT_NE(result.err.find("(arms found: none)"), std::string::npos) << result.err;
}

TEST(AbFleet, AnHttpErrorIsOneLine) {
  const FakePrometheus prometheus([](const std::string&) { return FakePrometheus::http(503, "Service Unavailable"); });
  const CommandResult result = run_fleet(prometheus.url(), ::testing::TempDir() + "/tcptune-fleet-503");
  EXPECT_EQ(result.status, 1);
  EXPECT_EQ(lines_of(result.err), 1U) << result.err;
  EXPECT_NE(result.err.find(prometheus.url() + ": HTTP 503: Service Unavailable"), std::string::npos) << result.err;
}

TEST(AbFleet, ARefusedQueryIsOneLine) {
  const FakePrometheus prometheus([](const std::string& target) {
    if (target.rfind("/api/v1/query?", 0) == 0) {
      return FakePrometheus::http(200, arms_answer({"off", "on"}));
    }
    return FakePrometheus::http(
        422, R"({"status":"error","errorType":"execution","error":"query processing would load too many samples"})");
  });
  const CommandResult result = run_fleet(prometheus.url(), ::testing::TempDir() + "/tcptune-fleet-422");
  EXPECT_EQ(result.status, 1);
  EXPECT_EQ(lines_of(result.err), 1U) << result.err;
  EXPECT_NE(result.err.find("Prometheus refused the query (execution, HTTP 422): query processing would load too"),
            std::string::npos)
      << result.err;
}

TEST(AbFleet, AnUnreachableUrlIsOneLine) {
  // A port nobody listens on: bound and closed again.
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof address;
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
  ASSERT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length), 0);
  ::close(fd);
  const std::string url = "http://127.0.0.1:" + std::to_string(ntohs(address.sin_port));
  const CommandResult result = run_fleet(url, ::testing::TempDir() + "/tcptune-fleet-refused");
  EXPECT_EQ(result.status, 1);
  EXPECT_EQ(lines_of(result.err), 1U) << result.err;
  EXPECT_NE(result.err.find("no answer from Prometheus at " + url + ": cannot connect to 127.0.0.1:"),
            std::string::npos)
      << result.err;
  EXPECT_NE(result.err.find("Connection refused"), std::string::npos) << result.err;
}

TEST(AbFleet, NotAPrometheusUrlIsAUsageError) {
  const CommandResult result = run_fleet("https://prometheus:9090", ::testing::TempDir() + "/tcptune-fleet-https");
  EXPECT_EQ(result.status, 2);
  EXPECT_EQ(lines_of(result.err), 1U) << result.err;
}

}  // namespace
}  // namespace tcptune::cli
