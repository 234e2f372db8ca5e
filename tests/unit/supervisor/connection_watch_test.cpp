// The connection watch against the kernel: a watched client and an accepted socket found by its
// listener's port get conn_close records with the rule and the last TCP_INFO, once closed, and
// are counted per rule for the textfile.
#include "connection_watch.hpp"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "call_records.hpp"
#include "loopback_connection.hpp"
#include "metrics_textfile.hpp"
#include "socket_probe.hpp"

namespace tcptune::supervisor {
namespace {

constexpr std::int64_t kIntervalNs = 1'000'000;  // 1 ms: every tick dumps

std::vector<nlohmann::json> records_of(const std::string& path, const char* event) {
  std::vector<nlohmann::json> records;
  std::ifstream log(path);
  for (std::string line; std::getline(log, line);) {
    nlohmann::json record = nlohmann::json::parse(line);
    if (record["event"] == event) {
      records.push_back(record);
    }
  }
  return records;
}

std::vector<nlohmann::json> conn_closes(const std::string& path) {
  return records_of(path, "conn_close");
}

std::string local_of(int fd) {
  return config::format_endpoint(shim::local_endpoint(fd));
}

std::string peer_of(int fd) {
  return config::format_endpoint(shim::peer_endpoint(fd));
}

std::uint64_t cookie_of(int fd) {
  std::uint64_t cookie = 0;
  socklen_t length = sizeof cookie;
  EXPECT_EQ(getsockopt(fd, SOL_SOCKET, SO_COOKIE, &cookie, &length), 0);
  return cookie;
}

// No poll but the early ones.
constexpr std::int64_t kHourNs = std::int64_t{3600} * 1'000'000'000;

class ConnectionWatchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = "/tmp/tcptune-connection-watch-" + std::to_string(getpid()) + ".jsonl";
    (void)std::remove(path_.c_str());
    ASSERT_EQ(log_.open(path_, config::LogLevel::info, config::LogFormat::jsonl), "");
    config::Rule rule;
    rule.name = "watched";
    policy_.rules.push_back(rule);
  }
  void TearDown() override { (void)std::remove(path_.c_str()); }

  // A tick, and its records flushed to the file (the supervisor flushes between calls).
  void tick_after(ConnectionWatch& watch) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    watch.tick();
    log_.flush();
  }

  std::string path_;
  SupervisorLog log_;
  config::Policy policy_;
};

TEST_F(ConnectionWatchTest, ClosedConnectionsAreReportedWithTheirLastTcpInfo) {
  ConnectionWatch watch(policy_, log_, kIntervalNs);
  Loopback loopback;
  ASSERT_TRUE(loopback.open(AF_INET, "127.0.0.1", "127.0.0.1"));
  watch.watch_connection(inode_of(loopback.client), loopback.client, shim::SocketRole::client, 0, getpid(), "probe");
  watch.watch_listener(inode_of(loopback.listener), shim::local_endpoint(loopback.listener), AF_INET, getpid(),
                       "probe");
  ASSERT_EQ(write(loopback.client, "hello", 5), 5);
  tick_after(watch);  // sees both: the accepted socket by its listener's port
  EXPECT_TRUE(conn_closes(path_).empty()) << "nothing is closed yet";
  loopback.close_all();
  tick_after(watch);
  const std::vector<nlohmann::json> closes = conn_closes(path_);
  ASSERT_EQ(closes.size(), 2U);
  bool client = false;
  bool server = false;
  for (const nlohmann::json& record : closes) {
    EXPECT_EQ(record["supervised"], true);
    EXPECT_EQ(record["writes_measured"], false);
    EXPECT_EQ(record["open_at_exit"], false);
    ASSERT_TRUE(record.contains("tcp_info")) << record;
    EXPECT_GT(record["tcp_info"]["rtt_us"].get<int>(), 0) << record;
    if (record["role"] == "client") {
      client = true;
      EXPECT_EQ(record["rule"], "watched");
      EXPECT_GE(record["tcp_info"]["bytes_acked"].get<int>(), 5) << record;
    } else if (record["role"] == "server") {
      server = true;
      EXPECT_EQ(record["rule"], "watched") << "the rule is chosen as at accept: the only rule matches all";
      EXPECT_FALSE(record.contains("fd")) << "an accepted socket's descriptor was never seen";
    }
  }
  EXPECT_TRUE(client && server) << closes.size();
}

TEST_F(ConnectionWatchTest, AConnectionNeverDumpedIsReportedAtTheEndWithoutTcpInfo) {
  ConnectionWatch watch(policy_, log_, kIntervalNs);
  Loopback loopback;
  ASSERT_TRUE(loopback.open(AF_INET, "127.0.0.1", "127.0.0.1"));
  watch.watch_connection(inode_of(loopback.client), loopback.client, shim::SocketRole::client, -1, getpid(), "probe");
  loopback.close_all();
  watch.finish();
  log_.flush();
  const std::vector<nlohmann::json> closes = conn_closes(path_);
  ASSERT_EQ(closes.size(), 1U);
  EXPECT_EQ(closes[0]["rule"], "(defaults)");
  EXPECT_FALSE(closes[0].contains("tcp_info"));
}

TEST_F(ConnectionWatchTest, FollowedConnectionsAreCountedPerRuleOnceOpenAndClosed) {
  ConnectionWatch watch(policy_, log_, kIntervalNs);
  Loopback loopback;
  ASSERT_TRUE(loopback.open(AF_INET, "127.0.0.1", "127.0.0.1"));
  watch.watch_connection(inode_of(loopback.client), loopback.client, shim::SocketRole::client, -1, getpid(), "probe");
  watch.watch_connection(inode_of(loopback.client), loopback.client, shim::SocketRole::client, -1, getpid(), "probe");
  watch.watch_listener(inode_of(loopback.listener), shim::local_endpoint(loopback.listener), AF_INET, getpid(),
                       "probe");
  EXPECT_EQ(watch.counts_by_rule().at(-1).connections, 1U) << "a client counts once, from its connect";
  EXPECT_EQ(watch.counts_by_rule().count(0), 0U) << "the accepted socket is not found yet";
  tick_after(watch);
  EXPECT_EQ(watch.counts_by_rule().at(0).connections, 1U) << "the accepted socket, under the only rule";
  loopback.close_all();
  tick_after(watch);
  watch.finish();
  EXPECT_EQ(watch.counts_by_rule().at(-1).connections, 1U) << "closed connections stay counted";
  EXPECT_EQ(watch.counts_by_rule().at(0).connections, 1U);
  EXPECT_EQ(watch.counts_by_rule().at(-1).idle_restarts, 0U);
}

// A listener on 127.0.0.X:`port` (0: any) with SO_REUSEADDR, so that its port can be listened
// on again once it is closed; a client connected to it; the accepted socket.
struct OnAddress {
  int listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int client = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int accepted = -1;
  int error = 0;  // errno of the step that failed
  OnAddress(const char* address, std::uint16_t port) {
    sockaddr_in in{};
    in.sin_family = AF_INET;
    in.sin_port = htons(port);
    inet_pton(AF_INET, address, &in.sin_addr);
    const int on = 1;
    (void)setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
    if (bind(listener, reinterpret_cast<sockaddr*>(&in), sizeof in) == 0 && ::listen(listener, 4) == 0 &&
        (in.sin_port = htons(local_port(listener)), connect(client, reinterpret_cast<sockaddr*>(&in), sizeof in)) ==
            0) {
      accepted = accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
    }
    error = accepted < 0 ? errno : 0;
  }
  ~OnAddress() {
    for (const int fd : {accepted, client, listener}) {
      if (fd >= 0) {
        close(fd);
      }
    }
  }
};

TEST_F(ConnectionWatchTest, OnlyTheWatchedListenersAcceptedSocketsAreFollowed) {
  ConnectionWatch watch(policy_, log_, kIntervalNs);
  auto ours = std::make_optional<OnAddress>("127.0.0.1", 0);
  ASSERT_GE(ours->accepted, 0) << std::strerror(ours->error);
  const std::uint16_t port = local_port(ours->listener);
  watch.watch_listener(inode_of(ours->listener), shim::local_endpoint(ours->listener), AF_INET, getpid(), "probe");
  const OnAddress other_address("127.0.0.2", port);
  ASSERT_GE(other_address.accepted, 0) << std::strerror(other_address.error);
  tick_after(watch);
  EXPECT_EQ(watch.counts_by_rule().at(0).connections, 1U) << "the same port on another address is not ours";
  ours.reset();
  tick_after(watch);  // the listener is gone from the dump: forgotten
  const OnAddress after_close("127.0.0.1", port);
  ASSERT_GE(after_close.accepted, 0) << std::strerror(after_close.error);
  tick_after(watch);
  EXPECT_EQ(watch.counts_by_rule().at(0).connections, 1U) << "a closed listener's port accepts for someone else";
}

// Where sockets are handed over, an accepted socket is known by inode only, from a trapped
// setsockopt: its role and rule come from the dump, even once its listener is closed, and its
// record keeps the descriptor.
TEST_F(ConnectionWatchTest, ASocketKnownByInodeIsFollowedWithTheRoleAndRuleOfItsEndpoints) {
  ConnectionWatch watch(policy_, log_, std::int64_t{3600} * 1'000'000'000);  // no poll but the early one
  Loopback loopback;
  ASSERT_TRUE(loopback.open(AF_INET, "127.0.0.1", "127.0.0.1"));
  watch.watch_listener(inode_of(loopback.listener), shim::local_endpoint(loopback.listener), AF_INET, getpid(),
                       "probe");
  close(loopback.listener);
  loopback.listener = -1;
  watch.watch_by_inode(inode_of(loopback.accepted), loopback.accepted, getpid(), "probe");
  std::this_thread::sleep_for(std::chrono::nanoseconds(ConnectionWatch::kEarlyPollGap));
  tick_after(watch);  // the early dump, well before the interval
  EXPECT_EQ(watch.counts_by_rule().at(0).connections, 1U) << "followed from the early dump";
  const int accepted_fd = loopback.accepted;
  loopback.close_all();
  watch.finish();
  log_.flush();
  const std::vector<nlohmann::json> closes = conn_closes(path_);
  ASSERT_EQ(closes.size(), 1U);
  EXPECT_EQ(closes[0]["role"], "server") << "its local port is one a watched listener listened on";
  EXPECT_EQ(closes[0]["rule"], "watched");
  EXPECT_EQ(closes[0]["fd"], accepted_fd);
  EXPECT_TRUE(closes[0].contains("tcp_info"));
}

// A client's conn_open names both ends: it waits for a dump that shows them.
TEST_F(ConnectionWatchTest, AClientsConnOpenWaitsForADumpThatShowsBothEnds) {
  ConnectionWatch watch(policy_, log_, kHourNs);
  Loopback loopback;
  ASSERT_TRUE(loopback.open(AF_INET, "127.0.0.1", "127.0.0.1"));
  watch.watch_connection(inode_of(loopback.client), loopback.client, shim::SocketRole::client, 0, getpid(), "probe",
                         {{}, shim::peer_endpoint(loopback.client), cookie_of(loopback.client)}, shim::ApplyReport{});
  log_.flush();
  EXPECT_TRUE(records_of(path_, "conn_open").empty()) << "written once a dump shows its local end";
  std::this_thread::sleep_for(std::chrono::nanoseconds(ConnectionWatch::kEarlyPollGap));
  tick_after(watch);
  const std::vector<nlohmann::json> opens = records_of(path_, "conn_open");
  ASSERT_EQ(opens.size(), 1U);
  EXPECT_EQ(opens[0]["local"], local_of(loopback.client)) << opens[0];
  EXPECT_EQ(opens[0]["peer"], peer_of(loopback.client)) << opens[0];
  EXPECT_EQ(opens[0]["phase"], "before_connect");
  EXPECT_EQ(opens[0]["supervised"], true);
  EXPECT_EQ(opens[0]["rule"], "watched");
  const std::string local = local_of(loopback.client);
  loopback.close_all();
  watch.finish();
  log_.flush();
  const std::vector<nlohmann::json> closes = conn_closes(path_);
  ASSERT_EQ(closes.size(), 1U);
  EXPECT_EQ(closes[0]["local"], local) << closes[0];
}

// One that closed before any dump (it closed first: TIME_WAIT on its side) is found there by its
// cookie: both records name both ends, at once.
TEST_F(ConnectionWatchTest, AClientThatClosedFirstIsNamedFromItsTimeWait) {
  ConnectionWatch watch(policy_, log_, kHourNs);
  Loopback loopback;
  ASSERT_TRUE(loopback.open(AF_INET, "127.0.0.1", "127.0.0.1"));
  const std::string local = local_of(loopback.client);
  const std::string peer = peer_of(loopback.client);
  watch.watch_connection(inode_of(loopback.client), loopback.client, shim::SocketRole::client, 0, getpid(), "probe",
                         {{}, shim::peer_endpoint(loopback.client), cookie_of(loopback.client)}, shim::ApplyReport{});
  close(loopback.client);  // first: its side ends in TIME_WAIT
  loopback.client = -1;
  char byte = 0;
  EXPECT_EQ(read(loopback.accepted, &byte, 1), 0) << "the FIN came";
  loopback.close_all();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // the last ACK, on loopback
  tick_after(watch);
  const std::vector<nlohmann::json> opens = records_of(path_, "conn_open");
  const std::vector<nlohmann::json> closes = conn_closes(path_);
  ASSERT_EQ(opens.size(), 1U);
  ASSERT_EQ(closes.size(), 1U) << "reported closed at once, not after kUnseenPolls dumps";
  for (const nlohmann::json& record : {opens[0], closes[0]}) {
    EXPECT_EQ(record["local"], local) << record;
    EXPECT_EQ(record["peer"], peer) << record;
  }
}

// Never seen (no cookie to find it by): its records name the peer it connected to, no local end.
TEST_F(ConnectionWatchTest, AClientNeverSeenIsNamedByItsPeerAtTheEnd) {
  ConnectionWatch watch(policy_, log_, kHourNs);
  Loopback loopback;
  ASSERT_TRUE(loopback.open(AF_INET, "127.0.0.1", "127.0.0.1"));
  const std::string peer = peer_of(loopback.client);
  watch.watch_connection(inode_of(loopback.client), loopback.client, shim::SocketRole::client, 0, getpid(), "probe",
                         {{}, shim::peer_endpoint(loopback.client), 0}, shim::ApplyReport{});
  loopback.close_all();
  watch.finish();
  log_.flush();
  const std::vector<nlohmann::json> opens = records_of(path_, "conn_open");
  const std::vector<nlohmann::json> closes = conn_closes(path_);
  ASSERT_EQ(opens.size(), 1U);
  ASSERT_EQ(closes.size(), 1U);
  for (const nlohmann::json& record : {opens[0], closes[0]}) {
    EXPECT_EQ(record["peer"], peer) << record;
    EXPECT_FALSE(record.contains("local")) << record;
  }
}

// The records thread may handle a listen before the program's call has run: a dump then does
// not show the listener yet, which is not a listener closed.
TEST_F(ConnectionWatchTest, AListenerNotListeningYetAtTheFirstDumpIsKept) {
  ConnectionWatch watch(policy_, log_, kIntervalNs);
  const int listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in in{};
  in.sin_family = AF_INET;
  inet_pton(AF_INET, "127.0.0.1", &in.sin_addr);
  ASSERT_EQ(bind(listener, reinterpret_cast<sockaddr*>(&in), sizeof in), 0);
  watch.watch_listener(inode_of(listener), shim::local_endpoint(listener), AF_INET, getpid(), "probe");
  tick_after(watch);  // before its listen
  ASSERT_EQ(::listen(listener, 4), 0);
  in.sin_port = htons(local_port(listener));
  const int client = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_EQ(connect(client, reinterpret_cast<sockaddr*>(&in), sizeof in), 0);
  const int accepted = accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
  ASSERT_GE(accepted, 0);
  tick_after(watch);
  EXPECT_EQ(watch.counts_by_rule().count(0), 1U) << "its accepted socket is followed";
  for (const int fd : {accepted, client, listener}) {
    close(fd);
  }
}

// A dual-stack client connected to an IPv4 address has IPv4 ends, but only the AF_INET6 dump
// shows it: the family the watch dumps is the socket's, not its ends'.
TEST_F(ConnectionWatchTest, ADualStackClientIsFoundByItsSocketsFamily) {
  ConnectionWatch watch(policy_, log_, kHourNs);
  Loopback loopback;
  if (!loopback.open(AF_INET6, "::", "::ffff:127.0.0.1")) {
    GTEST_SKIP() << "no dual-stack loopback here";
  }
  watch.watch_connection(inode_of(loopback.client), loopback.client, shim::SocketRole::client, 0, getpid(), "probe",
                         {{}, shim::peer_endpoint(loopback.client), cookie_of(loopback.client), AF_INET6},
                         shim::ApplyReport{});
  std::this_thread::sleep_for(std::chrono::nanoseconds(ConnectionWatch::kEarlyPollGap));
  tick_after(watch);
  const std::vector<nlohmann::json> opens = records_of(path_, "conn_open");
  ASSERT_EQ(opens.size(), 1U) << "the AF_INET6 dump was made";
  EXPECT_EQ(opens[0]["local"], local_of(loopback.client)) << opens[0];
  EXPECT_EQ(opens[0]["peer"], "127.0.0.1:" + std::to_string(shim::peer_endpoint(loopback.client).port)) << opens[0];
}

// A connect refused for a sockaddr of the other family leaves the socket unconnected, and the
// family the call gave wrong. Where sockets are handed over the connect made again is not
// trapped: a dump that misses the client looks in both families from then on.
TEST_F(ConnectionWatchTest, AClientMissedInTheFamilyItsCallGaveIsLookedForInBoth) {
  ConnectionWatch watch(policy_, log_, kIntervalNs);
  Loopback loopback;
  ASSERT_TRUE(loopback.open(AF_INET, "127.0.0.1", "127.0.0.1"));
  watch.watch_connection(inode_of(loopback.client), loopback.client, shim::SocketRole::client, 0, getpid(), "probe",
                         {{}, shim::peer_endpoint(loopback.client), cookie_of(loopback.client), AF_INET6},
                         shim::ApplyReport{});
  tick_after(watch);  // the AF_INET6 dump alone: missed
  EXPECT_TRUE(records_of(path_, "conn_open").empty());
  tick_after(watch);
  const std::vector<nlohmann::json> opens = records_of(path_, "conn_open");
  ASSERT_EQ(opens.size(), 1U);
  EXPECT_EQ(opens[0]["local"], local_of(loopback.client)) << opens[0];
}

// Where the connect made again is trapped and tuned again, it replaces the first call's: one
// conn_open, with the peer and family of the connect that connected.
TEST_F(ConnectionWatchTest, AClientTunedAgainBeforeAnyDumpShowedItIsOneConnection) {
  ConnectionWatch watch(policy_, log_, kIntervalNs);
  Loopback loopback;
  ASSERT_TRUE(loopback.open(AF_INET, "127.0.0.1", "127.0.0.1"));
  config::Endpoint refused = shim::peer_endpoint(loopback.client);
  refused.port = 9;
  watch.watch_connection(inode_of(loopback.client), loopback.client, shim::SocketRole::client, 0, getpid(), "probe",
                         {{}, refused, cookie_of(loopback.client), AF_INET6}, shim::ApplyReport{});
  tick_after(watch);  // missed: its first connect failed
  watch.watch_connection(inode_of(loopback.client), loopback.client, shim::SocketRole::client, 0, getpid(), "probe",
                         {{}, shim::peer_endpoint(loopback.client), cookie_of(loopback.client), AF_INET},
                         shim::ApplyReport{});
  tick_after(watch);
  const std::string local = local_of(loopback.client);
  const std::string peer = peer_of(loopback.client);
  loopback.close_all();
  tick_after(watch);
  watch.finish();
  log_.flush();
  const std::vector<nlohmann::json> opens = records_of(path_, "conn_open");
  ASSERT_EQ(opens.size(), 1U);
  EXPECT_EQ(opens[0]["local"], local) << opens[0];
  EXPECT_EQ(opens[0]["peer"], peer) << "the connect that connected, not port 9";
  const std::vector<nlohmann::json> closes = conn_closes(path_);
  ASSERT_EQ(closes.size(), 1U);
  EXPECT_EQ(closes[0]["local"], local) << closes[0];
  EXPECT_EQ(watch.counts_by_rule().at(0).connections, 1U);
}

// An IPv4 listener on any address takes the IPv4 connections of its port, not those an IPv6-only
// listener on the same port number accepts (nor does the watch dump IPv6 sockets for it).
TEST_F(ConnectionWatchTest, AListenersAcceptedSocketsAreOfItsFamily) {
  ConnectionWatch watch(policy_, log_, kIntervalNs);
  Loopback ipv4;
  ASSERT_TRUE(ipv4.open(AF_INET, "0.0.0.0", "127.0.0.1"));
  const std::uint16_t port = local_port(ipv4.listener);
  const int listener6 = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(listener6, 0);
  const int only = 1;
  ASSERT_EQ(setsockopt(listener6, IPPROTO_IPV6, IPV6_V6ONLY, &only, sizeof only), 0);
  sockaddr_in6 in6{};
  in6.sin6_family = AF_INET6;
  in6.sin6_addr = in6addr_loopback;
  in6.sin6_port = htons(port);
  if (bind(listener6, reinterpret_cast<sockaddr*>(&in6), sizeof in6) != 0) {
    close(listener6);
    GTEST_SKIP() << "no IPv6 loopback here, or its port is taken: " << std::strerror(errno);
  }
  ASSERT_EQ(::listen(listener6, 4), 0);
  const int client6 = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_EQ(connect(client6, reinterpret_cast<sockaddr*>(&in6), sizeof in6), 0);
  const int accepted6 = accept4(listener6, nullptr, nullptr, SOCK_CLOEXEC);
  ASSERT_GE(accepted6, 0);
  watch.watch_listener(inode_of(ipv4.listener), shim::local_endpoint(ipv4.listener), AF_INET, getpid(), "probe");
  tick_after(watch);
  ASSERT_EQ(watch.counts_by_rule().count(0), 1U);
  EXPECT_EQ(watch.counts_by_rule().at(0).connections, 1U) << "the IPv4 listener's accepted socket alone";
  for (const int fd : {accepted6, client6, listener6}) {
    close(fd);
  }
}

TEST_F(ConnectionWatchTest, ATextfileAloneIsEnoughToFollowAndCount) {
  SupervisorLog no_log;
  policy_.log.prometheus_textfile = "/tmp/unused.prom";
  ConnectionWatch watch(policy_, no_log, kIntervalNs);
  Loopback loopback;
  ASSERT_TRUE(loopback.open(AF_INET, "127.0.0.1", "127.0.0.1"));
  watch.watch_connection(inode_of(loopback.client), loopback.client, shim::SocketRole::client, 0, getpid(), "probe");
  EXPECT_EQ(watch.counts_by_rule().at(0).connections, 1U);
}

// TCPTUNE_ARM in supervised mode: "arm" after "program" on every record, and arm="..." on every
// series of the supervisor's textfile.
TEST_F(ConnectionWatchTest, AnArmOnEveryRecordAndSeries) {
  const std::string log_path = path_ + ".arm";
  const std::string textfile = "/tmp/tcptune-connection-watch-" + std::to_string(getpid()) + ".prom";
  SupervisorLog log;
  ASSERT_EQ(log.open(log_path, config::LogLevel::info, config::LogFormat::jsonl, "off"), "");
  policy_.log.prometheus_textfile = textfile;
  ConnectionWatch watch(policy_, log, kIntervalNs);
  Loopback loopback;
  ASSERT_TRUE(loopback.open(AF_INET, "127.0.0.1", "127.0.0.1"));
  watch.watch_connection(inode_of(loopback.client), loopback.client, shim::SocketRole::client, 0, getpid(), "probe");
  for (int tick = 0; tick < 2; ++tick) {  // sees it open, then closed: its conn_close
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    watch.tick();
    loopback.close_all();
  }
  log.flush();
  std::ifstream lines(log_path);
  std::string line;
  int records = 0;
  while (std::getline(lines, line)) {
    ++records;
    EXPECT_NE(line.find(R"("program":"probe","arm":"off",)"), std::string::npos) << line;
  }
  EXPECT_GT(records, 0);
  CallRecords calls(policy_, log, &watch);
  MetricsTextfile metrics(policy_, log, "probe", getpid(), "off");
  metrics.write_last(watch, calls, 0);
  std::ifstream in(textfile);
  std::string series;
  int samples = 0;
  while (std::getline(in, series)) {
    if (!series.empty() && series[0] != '#') {
      ++samples;
      EXPECT_NE(series.find(R"({program="probe",arm="off")"), std::string::npos) << series;
    }
  }
  EXPECT_GT(samples, 0);
  for (const std::string& path : {log_path, textfile, textfile + ".lock"}) {
    (void)std::remove(path.c_str());
  }
}

}  // namespace
}  // namespace tcptune::supervisor
