#include "tcptune/config/value_parsers.hpp"

#include <gtest/gtest.h>

#include "tcptune/config/log_names.hpp"
#include "tcptune/config/sockopt_names.hpp"

namespace tcptune::config {
namespace {

using namespace std::chrono_literals;

PolicyValue text(std::string_view s) {
  return PolicyValue::of_string(s);
}
PolicyValue number(std::int64_t i) {
  return PolicyValue::of_integer(i);
}

template <typename T>
std::string error_of(const Parsed<T>& parsed) {
  return parsed.ok() ? "(no error)" : parsed.error();
}

TEST(ValueParsers, DescribeQuotesLikeTheMessages) {
  EXPECT_EQ(describe(text("on")), "\"on\"");
  EXPECT_EQ(describe(number(-3)), "-3");
  EXPECT_EQ(describe(PolicyValue::of_bool(false)), "false");
  EXPECT_EQ(describe(PolicyValue::of_float(1.5)), "1.5");
  EXPECT_EQ(describe(PolicyValue::of_type(PolicyValue::Type::table)), "a table");
  EXPECT_EQ(describe(PolicyValue::of_type(PolicyValue::Type::array)), "an array");
  EXPECT_EQ(describe(PolicyValue::of_type(PolicyValue::Type::date_time)), "a date or time");
}

TEST(ValueParsers, Scalars) {
  EXPECT_EQ(parse_string(text("x"), "path").value(), "x");
  EXPECT_EQ(error_of(parse_string(number(1), "path")), "'path' must be a string, not 1");
  EXPECT_TRUE(parse_bool(PolicyValue::of_bool(true), "quickack").value());
  EXPECT_EQ(error_of(parse_bool(text("yes"), "quickack")), "'quickack' must be true or false, not \"yes\"");
  EXPECT_EQ(parse_integer(number(4), "count", 1, 127).value(), 4);
  EXPECT_EQ(error_of(parse_integer(number(128), "count", 1, 127)), "'count' must be between 1 and 127, not 128");
  EXPECT_EQ(error_of(parse_integer(text("4"), "count", 1, 127)), "'count' must be an integer, not \"4\"");
}

TEST(ValueParsers, Sizes) {
  EXPECT_EQ(parse_size_value(text("64KiB"), "sndbuf", 1024, 1 << 30).value(), 65536U);
  EXPECT_EQ(parse_size_value(number(4096), "sndbuf", 1024, 1 << 30).value(), 4096U);
  EXPECT_EQ(error_of(parse_size_value(number(-1), "sndbuf", 1024, 1 << 30)), "'sndbuf' must not be negative");
  EXPECT_EQ(error_of(parse_size_value(number(10), "sndbuf", 1024, 1 << 30)),
            "'sndbuf' must be between 1.02 kB and 1.07 GB, not 10 B");
  EXPECT_EQ(error_of(parse_size_value(PolicyValue::of_bool(true), "sndbuf", 1024, 1 << 30)),
            "'sndbuf' must be a size such as \"64KiB\", not true");
  EXPECT_EQ(error_of(parse_size_value(text("64KQ"), "sndbuf", 1024, 1 << 30)),
            "'sndbuf': " + parse_size("64KQ").error());
}

TEST(ValueParsers, Durations) {
  EXPECT_EQ(parse_duration_value(text("2s"), "idle", 1s, 10s).value(), 2s);
  EXPECT_EQ(error_of(parse_duration_value(number(2), "idle", 1s, 10s)),
            "'idle' must be a duration such as \"500ms\", not 2");
  EXPECT_EQ(error_of(parse_duration_value(text("20s"), "idle", 1s, 10s)),
            "'idle' must be between " + format_duration(1s) + " and " + format_duration(10s) + ", not " +
                format_duration(20s));
  EXPECT_EQ(error_of(parse_duration_value(text("2"), "idle", 1s, 10s)), "'idle': " + parse_duration("2").error());
}

TEST(ValueParsers, Version) {
  EXPECT_EQ(parse_version(number(1)).value(), 1);
  EXPECT_EQ(error_of(parse_version(number(2))), "unsupported policy version 2; this tcptune reads version = 1");
  EXPECT_EQ(error_of(parse_version(text("1"))), "unsupported policy version \"1\"; this tcptune reads version = 1");
}

TEST(ValueParsers, Nodelay) {
  EXPECT_EQ(parse_nodelay(text("force")).value(), NodelayMode::force);
  EXPECT_EQ(parse_nodelay(text("keep")).value(), NodelayMode::keep);
  EXPECT_EQ(parse_nodelay(text("on-wait")).value(), NodelayMode::on_wait);
  EXPECT_EQ(error_of(parse_nodelay(PolicyValue::of_bool(true))),
            "'nodelay' must be one of \"on\", \"force\", \"off\", \"keep\", \"on-wait\", not true");
}

TEST(ValueParsers, Congestion) {
  EXPECT_EQ(parse_congestion(text("bbr")).value(), "bbr");
  EXPECT_EQ(parse_congestion(text("abcdefghijklmno")).value(), "abcdefghijklmno");  // 15, the kernel's most
  const std::string refused =
      "\" is not a congestion control name (lower-case letters, digits, _; at most 15), e.g. \"bbr\" or \"cubic\"";
  EXPECT_EQ(error_of(parse_congestion(text("BBR"))), "'congestion' \"BBR" + refused);
  EXPECT_EQ(error_of(parse_congestion(text("abcdefghijklmnop"))), "'congestion' \"abcdefghijklmnop" + refused);
  EXPECT_EQ(error_of(parse_congestion(text(""))), "'congestion' \"" + refused);
  EXPECT_EQ(error_of(parse_congestion(number(1))), "'congestion' must be a string, not 1");
}

TEST(ValueParsers, Tos) {
  EXPECT_EQ(parse_tos(text("0x10")).value(), 16);
  EXPECT_EQ(parse_tos(number(255)).value(), 255);
  const std::string refused = "'tos' must be 0..255 (a number or a string such as \"0x10\"), not ";
  EXPECT_EQ(error_of(parse_tos(number(256))), refused + "256");
  EXPECT_EQ(error_of(parse_tos(text("0x10 "))), refused + "\"0x10 \"");
  EXPECT_EQ(error_of(parse_tos(text(""))), refused + "\"\"");
  EXPECT_EQ(error_of(parse_tos(PolicyValue::of_float(1.0))), refused + "1");
}

TEST(ValueParsers, Bandwidth) {
  EXPECT_EQ(parse_bandwidth(text("8Mbit")).value(), 1000000U);
  EXPECT_EQ(error_of(parse_bandwidth(number(1))), "'bandwidth' must be a rate such as \"1Gbit\", not 1");
  EXPECT_EQ(error_of(parse_bandwidth(text("0bit"))), "'bandwidth' must be above zero");
  EXPECT_EQ(error_of(parse_bandwidth(text("fast"))), "'bandwidth': " + parse_rate("fast").error());
}

TEST(ValueParsers, RttAndKeepWarmInterval) {
  EXPECT_FALSE(parse_rtt(text("auto")).value().has_value());
  EXPECT_EQ(parse_rtt(text("180ms")).value(), 180ms);
  EXPECT_EQ(error_of(parse_rtt(number(1))), "'rtt' must be a duration such as \"500ms\", not 1");
  EXPECT_EQ(error_of(parse_rtt(text("5us"))), "'rtt' must be between " + format_duration(10us) + " and " +
                                                  format_duration(60s) + ", not " + format_duration(5us));
  EXPECT_FALSE(parse_keep_warm_interval(text("auto")).value().has_value());
  EXPECT_EQ(parse_keep_warm_interval(text("150ms")).value(), 150ms);
  EXPECT_EQ(error_of(parse_keep_warm_interval(number(3))),
            "'interval' must be \"auto\" or a duration such as \"150ms\", not 3");
  EXPECT_EQ(error_of(parse_keep_warm_interval(text("5ms"))), "'interval' must be between " + format_duration(10ms) +
                                                                 " and " + format_duration(1h) + ", not " +
                                                                 format_duration(5ms));
  EXPECT_EQ(parse_keep_warm_max_idle(text("1m")).value(), 60s);
  EXPECT_EQ(error_of(parse_keep_warm_max_idle(text("25h"))), "'max_idle' must be between " + format_duration(1s) +
                                                                 " and " + format_duration(24h) + ", not " +
                                                                 format_duration(25h));
}

TEST(ValueParsers, Heartbeats) {
  EXPECT_EQ(parse_heartbeat(text("\n")).value(), "\n");
  EXPECT_EQ(error_of(parse_heartbeat(text(""))), "'heartbeat' must not be empty (1 to 64 bytes)");
  EXPECT_EQ(error_of(parse_heartbeat(text(std::string(65, 'x')))), "'heartbeat' is 65 bytes; at most 64");
  EXPECT_EQ(error_of(parse_heartbeat(number(10))), "'heartbeat' must be a string, not 10");

  EXPECT_EQ(parse_heartbeat_hex(text("0a0D")).value(), std::string("\n\r"));
  EXPECT_EQ(parse_heartbeat_hex(text("00")).value(), std::string(1, '\0'));
  EXPECT_EQ(error_of(parse_heartbeat_hex(text(""))), "'heartbeat_hex' must not be empty (1 to 64 bytes)");
  EXPECT_EQ(error_of(parse_heartbeat_hex(text(std::string(130, 'a')))), "'heartbeat_hex' is 65 bytes; at most 64");
  EXPECT_EQ(error_of(parse_heartbeat_hex(text("0a0"))),
            "'heartbeat_hex' has an odd number of hex digits (3); each byte takes two");
  EXPECT_EQ(error_of(parse_heartbeat_hex(text("0x0a"))),
            "'heartbeat_hex' has 'x' at offset 1: only hex digits 0-9, a-f, A-F (no spaces or 0x prefix)");
  EXPECT_EQ(error_of(parse_heartbeat_hex(text("0a\n"))),
            "'heartbeat_hex' has \\n at offset 2: only hex digits 0-9, a-f, A-F (no spaces or 0x prefix)");
  EXPECT_EQ(error_of(parse_heartbeat_hex(text("\xc3\xa9"))),
            "'heartbeat_hex' has \\xc3 at offset 0: only hex digits 0-9, a-f, A-F (no spaces or 0x prefix)");
  EXPECT_EQ(error_of(parse_heartbeat_hex(number(10))),
            "'heartbeat_hex' must be a string of hex digits such as \"0a\", not 10");
}

TEST(ValueParsers, Match) {
  EXPECT_EQ(parse_role(text("server")).value(), Role::server);
  EXPECT_EQ(error_of(parse_role(text("srv"))), "'role' must be \"client\", \"server\" or \"any\", not \"srv\"");

  EXPECT_EQ(parse_port(number(443)).value().first, 443);
  EXPECT_EQ(parse_port(text("8000-8100")).value().last, 8100);
  EXPECT_EQ(parse_port(text("22")).value().last, 22);
  EXPECT_EQ(error_of(parse_port(number(0))), "'port' must be 1..65535, not 0");
  EXPECT_EQ(error_of(parse_port(text("9-3"))), "'port' range \"9-3\" is reversed; did you mean \"3-9\"?");
  EXPECT_EQ(error_of(parse_port(text("80-"))),
            "'port' \"80-\" is not a port or range such as \"8000-8100\" (1..65535)");
  EXPECT_EQ(error_of(parse_port(text("1-70000"))),
            "'port' \"1-70000\" is not a port or range such as \"8000-8100\" (1..65535)");
  EXPECT_EQ(error_of(parse_port(PolicyValue::of_bool(true))),
            "'port' must be a number, a range string such as \"8000-8100\", or an array of those, not true");

  EXPECT_EQ(parse_rule_name(text("wan")).value(), "wan");
  EXPECT_EQ(error_of(parse_rule_name(text(""))), "'name' must not be empty");
  EXPECT_EQ(error_of(parse_rule_name(number(1))), "'name' must be a string, not 1");
}

TEST(ValueParsers, Log) {
  EXPECT_EQ(parse_log_level(text("warn")).value(), LogLevel::warn);
  EXPECT_EQ(error_of(parse_log_level(text("verbose"))),
            "'level' must be one of \"trace\", \"debug\", \"info\", \"warn\", \"error\", \"off\", not \"verbose\"");
  EXPECT_EQ(parse_log_format(text("jsonl")).value(), LogFormat::jsonl);
  EXPECT_EQ(error_of(parse_log_format(text("xml"))), "'format' must be \"text\" or \"jsonl\", not \"xml\"");
  EXPECT_EQ(parse_log_keep(number(100)).value(), 100);
  EXPECT_EQ(error_of(parse_log_keep(number(0))), "'keep' must be a whole number from 1 to 100, not 0");
}

// The names the shim reads from TCPTUNE_LOG_LEVEL and TCPTUNE_LOG_FORMAT.
TEST(LogNames, LookupAndLists) {
  EXPECT_EQ(log_level_named("trace"), LogLevel::trace);
  EXPECT_EQ(log_level_named("off"), LogLevel::off);
  EXPECT_FALSE(log_level_named("INFO").has_value());
  EXPECT_EQ(log_format_named("text"), LogFormat::text);
  EXPECT_FALSE(log_format_named("json").has_value());
  EXPECT_EQ(log_level_names("", ", ", ", "), "trace, debug, info, warn, error, off");
  EXPECT_EQ(log_format_names("", ", ", ", "), "text, jsonl");
}

TEST(SockoptNames, LevelsAndOptions) {
  EXPECT_EQ(find_socket_option("TCP_MAXSEG").value().level, find_sockopt_level("IPPROTO_TCP").value().level);
  EXPECT_EQ(error_of(find_sockopt_level("IPPROTO_TPC")),
            "unknown sockopt level \"IPPROTO_TPC\" (SOL_SOCKET, IPPROTO_TCP, IPPROTO_IP, IPPROTO_IPV6); did you mean "
            "'IPPROTO_TCP'?");
  EXPECT_EQ(error_of(find_socket_option("TCP_MAXSG")),
            "unknown socket option \"TCP_MAXSG\"; did you mean 'TCP_MAXSEG'?");
  EXPECT_EQ(error_of(find_socket_option("SO_LINGER")), "unknown socket option \"SO_LINGER\"");
  EXPECT_EQ(sockopt_level_mismatch(find_socket_option("TCP_MAXSEG").value(), find_sockopt_level("SOL_SOCKET").value()),
            "TCP_MAXSEG belongs to level IPPROTO_TCP, not SOL_SOCKET");
  EXPECT_EQ(sockopt_level_mismatch(find_socket_option("SO_MARK").value(), find_sockopt_level("SOL_SOCKET").value()),
            "");
}

}  // namespace
}  // namespace tcptune::config
