#include "json_writer.hpp"

#include <gtest/gtest.h>

#include <limits>
#include <string>
#include <utility>

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

// A program's name is whatever bytes its argv[0] holds; the line must stay valid JSON.
TEST(JsonObject, KeepsUtf8AndReplacesBytesThatAreNotUtf8) {
  EXPECT_EQ(JsonObject().field("program", "caf\xC3\xA9 \xF0\x9F\x98\x80").str(),
            "{\"program\":\"caf\xC3\xA9 \xF0\x9F\x98\x80\"}");
  // A stray byte, a cut sequence at the end, an overlong '/', a surrogate, past U+10FFFF.
  EXPECT_EQ(JsonObject().field("program", "bad\nname\xFF").str(), R"({"program":"bad\nname\ufffd"})");
  EXPECT_EQ(JsonObject().field("p", "a\xE2\x82").str(), R"({"p":"a\ufffd\ufffd"})");
  EXPECT_EQ(JsonObject().field("p", "\xC0\xAF").str(), R"({"p":"\ufffd\ufffd"})");
  EXPECT_EQ(JsonObject().field("p", "\xED\xA0\x80x").str(), R"({"p":"\ufffd\ufffd\ufffdx"})");
  EXPECT_EQ(JsonObject().field("p", "\xF4\x90\x80\x80").str(), R"({"p":"\ufffd\ufffd\ufffd\ufffd"})");
}

// Strings are scanned eight bytes at a time for what needs escaping: each kind of such byte, at
// every position of a string long enough for whole words, is found and escaped.
TEST(JsonObject, EscapesEachKindOfByteWhereverItIs) {
  const std::pair<std::string, std::string> kinds[] = {
      {"\"", "\\\""}, {"\\", "\\\\"}, {"\n", "\\n"}, {"\x1f", "\\u001f"},
      {std::string(1, '\0'), "\\u0000"}, {"\xC3\xA9", "\xC3\xA9"}, {"\xFF", "\\ufffd"}, {"\x7f", "\x7f"}};
  for (const auto& [raw, escaped] : kinds) {
    for (std::size_t at = 0; at <= 20; ++at) {
      const std::string text = std::string(at, 'a') + raw + std::string(20 - at, 'b');
      std::string out;
      append_json_string(out, text);
      EXPECT_EQ(out, "\"" + std::string(at, 'a') + escaped + std::string(20 - at, 'b') + "\"")
          << "a " << escaped << " at " << at;
    }
  }
  std::string plain;
  append_json_string(plain, "127.0.0.1:50716 (defaults) !#$%&'()*+,-./~");
  EXPECT_EQ(plain, "\"127.0.0.1:50716 (defaults) !#$%&'()*+,-./~\"");
}

TEST(JsonArray, JoinsValues) {
  EXPECT_EQ(JsonArray().str(), "[]");
  EXPECT_EQ(JsonArray().add_raw("1").add_raw(R"({"a":2})").str(), R"([1,{"a":2}])");
}

}  // namespace
}  // namespace tcptune::telemetry
