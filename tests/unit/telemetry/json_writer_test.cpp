#include "json_writer.hpp"

#include <gtest/gtest.h>

#include <limits>

namespace tcptune::telemetry {
namespace {

TEST(JsonObject, FieldsInOrderWithTypes) {
  const std::string line = JsonObject()
                               .field("event", "conn_close")
                               .field("fd", 7)
                               .field("bytes", std::uint64_t{18446744073709551615ULL})
                               .field("delta", std::int64_t{-3})
                               .field("p50_us", 91.25)
                               .field("ok", true)
                               .raw("tcp_info", JsonObject().field("cwnd", 10).str())
                               .str();
  EXPECT_EQ(line, R"({"event":"conn_close","fd":7,"bytes":18446744073709551615,"delta":-3,"p50_us":91.25,)"
                  R"("ok":true,"tcp_info":{"cwnd":10}})");
}

TEST(JsonObject, EscapesStringsAndRefusesNonFiniteNumbers) {
  const std::string line =
      JsonObject().field("program", "a\"b\\c\nd\x01").field("nan", std::numeric_limits<double>::quiet_NaN()).str();
  EXPECT_EQ(line, R"({"program":"a\"b\\c\nd\u0001","nan":null})");
}

TEST(JsonArray, JoinsValues) {
  EXPECT_EQ(JsonArray().str(), "[]");
  EXPECT_EQ(JsonArray().add_raw("1").add_raw(R"({"a":2})").str(), R"([1,{"a":2}])");
}

}  // namespace
}  // namespace tcptune::telemetry
