#include "log_record.hpp"

#include <gtest/gtest.h>

#include <string>

namespace tcptune::cli {
namespace {

TEST(LogRecord, ReadsARecord) {
  const auto record =
      parse_log_record(R"({"event":"conn_close","writes":407,"bytes":1.5e3,"peer":"127.0.0.1:80","ok":true,"x":null})");
  ASSERT_TRUE(record.has_value());
  EXPECT_EQ(string_field(*record, "event"), "conn_close");
  EXPECT_EQ(count_field(*record, "writes"), 407U);
  EXPECT_EQ(count_field(*record, "bytes"), 1500U);
  EXPECT_EQ(number_field(*record, "bytes"), 1500.0);
  EXPECT_EQ(string_field(*record, "peer"), "127.0.0.1:80");
}

TEST(LogRecord, WhitespaceAroundTheObjectIsJson) {
  EXPECT_TRUE(parse_log_record(" {\"a\":1}\r").has_value());
  EXPECT_TRUE(parse_log_record("\t{ \"a\" : [ 1 , 2 ] }  ").has_value());
}

TEST(LogRecord, LinesThatAreNoJsonObjectAreRefused) {
  for (const char* line : {"", "   ", "2026-12-03 12:00:00 tcptune: info: text log", R"({"event":"conn_close","wri)",
                           R"({"a":1} trailing)", R"({"a":1}{"b":2})", "[1,2]", "42", R"("text")", "null",
                           R"({"a":1,})", R"({'a':1})", R"({"a":1 /* comment */})", R"({a:1})"}) {
    EXPECT_FALSE(parse_log_record(line).has_value()) << line;
  }
}

// What the hand-written reader accepted and RFC 8259 does not.
TEST(LogRecord, NumbersAndEscapesOutsideRfc8259AreRefused) {
  EXPECT_FALSE(parse_log_record(R"({"writes":+1})").has_value());
  EXPECT_FALSE(parse_log_record(R"({"writes":01})").has_value());
  EXPECT_FALSE(parse_log_record(R"({"writes":.5})").has_value());
  EXPECT_FALSE(parse_log_record(R"({"program":"\u00zz"})").has_value());
  // A lone surrogate is no character either.
  EXPECT_FALSE(parse_log_record(R"({"program":"\ud83d"})").has_value());
  EXPECT_FALSE(parse_log_record(R"({"program":"\ude00\ud83d"})").has_value());
  // The same values written as JSON are read.
  const auto record = parse_log_record(R"({"a":1,"b":0,"c":0.5,"d":"\u00e9"})");
  ASSERT_TRUE(record.has_value());
  EXPECT_EQ(count_field(*record, "a"), 1U);
  EXPECT_EQ(number_field(*record, "c"), 0.5);
  EXPECT_EQ(string_field(*record, "d"), "\xc3\xa9");
}

TEST(LogRecord, ASurrogatePairIsOneCharacterInUtf8) {
  const auto record = parse_log_record(R"({"program":"app-\ud83d\ude00"})");
  ASSERT_TRUE(record.has_value());
  // U+1F600 in UTF-8 (4 bytes), not CESU-8 (two 3-byte halves: ed a0 bd ed b8 80).
  EXPECT_EQ(string_field(*record, "program"), "app-\xf0\x9f\x98\x80");
}

TEST(LogRecord, RawBytesThatAreNotUtf8AreRefused) {
  EXPECT_FALSE(parse_log_record("{\"program\":\"\xff\"}").has_value());
  EXPECT_TRUE(parse_log_record("{\"program\":\"\xc3\xa9\"}").has_value());
}

TEST(LogRecord, CountsOfDamagedRecordsAreZero) {
  const auto record = parse_log_record(
      R"({"negative":-5,"huge":1e30,"text":"7","fraction":2.9,"big":18446744073709551615,"list":[1]})");
  ASSERT_TRUE(record.has_value());
  EXPECT_EQ(count_field(*record, "negative"), 0U);
  EXPECT_EQ(count_field(*record, "huge"), 0U);
  EXPECT_EQ(count_field(*record, "text"), 0U);
  EXPECT_EQ(count_field(*record, "list"), 0U);
  EXPECT_EQ(count_field(*record, "missing"), 0U);
  EXPECT_EQ(count_field(*record, "fraction"), 2U);
  EXPECT_EQ(count_field(*record, "big"), 18446744073709551615U);  // exact, not through a double
  EXPECT_EQ(number_field(*record, "text"), 0.0);
  EXPECT_EQ(number_field(*record, "negative"), -5.0);
  EXPECT_EQ(string_field(*record, "negative", "(unknown)"), "(unknown)");
  EXPECT_EQ(string_field(*record, "missing", "(unknown)"), "(unknown)");
}

}  // namespace
}  // namespace tcptune::cli
