// tcptune advise on handcrafted logs, one per cause (tests/cli/fixtures/advise/), and a healthy
// one that must give no finding. Each written policy is loaded with `tcptune check`'s loader.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "advise_detectors.hpp"
#include "advise_policy_writer.hpp"
#include "advise_report.hpp"
#include "commands.hpp"
#include "log_file.hpp"
#include "tcptune/config/cidr.hpp"
#include "tcptune/config/policy_loader.hpp"
#include "tcptune/config/rule_matcher.hpp"

namespace tcptune::cli {
namespace {

std::string fixture(const std::string& name) {
  return TCPTUNE_SOURCE_DIR "/tests/cli/fixtures/advise/" + name;
}

struct Advice {
  Observations observations;
  std::vector<Finding> findings;
};

Advice advise(const std::vector<std::string>& names) {
  Advice advice;
  std::vector<std::string> files;
  for (const std::string& name : names) {
    files.push_back(fixture(name));
  }
  std::string error;
  EXPECT_TRUE(read_observations(files, advice.observations, error)) << error;
  advice.findings = find_all({advice.observations, "advised.toml", ""});
  return advice;
}

std::vector<const Finding*> with_cause(const Advice& advice, const std::string& cause) {
  std::vector<const Finding*> out;
  for (const Finding& finding : advice.findings) {
    if (finding.cause_code == cause) {
      out.push_back(&finding);
    }
  }
  return out;
}

std::string key_value(const Finding& finding, const std::string& key) {
  for (const auto& [name, value] : finding.rule.keys) {
    if (name == key) {
      return value;
    }
  }
  return {};
}

// The advised policy loads as `tcptune check` loads it, and returns it.
config::Policy load_advised(const Advice& advice) {
  const std::string text = advised_policy(advice.findings, {"a.jsonl"});
  EXPECT_FALSE(text.empty());
  const config::LoadResult loaded = config::load_policy_text(text, "advised.toml");
  EXPECT_TRUE(loaded.ok()) << (loaded.ok() ? "" : loaded.error().to_string()) << "\n" << text;
  EXPECT_TRUE(loaded.errors.empty()) << text;
  return loaded.ok() ? loaded.policy() : config::Policy{};
}

// The index of the rule the shim would apply to an IPv4 socket, -1 for [defaults].
int matching_rule(const config::Policy& policy, config::Role role, const std::string& program, const char* local,
                  const char* peer) {
  const auto endpoint = [](const char* text) {
    sockaddr_in address{};
    address.sin_family = AF_INET;
    const std::string written(text);
    const auto colon = written.rfind(':');
    (void)inet_pton(AF_INET, written.substr(0, colon).c_str(), &address.sin_addr);
    address.sin_port = htons(static_cast<std::uint16_t>(std::stoi(written.substr(colon + 1))));
    return config::endpoint_from_sockaddr(reinterpret_cast<const sockaddr*>(&address), sizeof address);
  };
  config::ConnectionFacts facts;
  facts.role = role;
  facts.program = program;
  facts.peer = endpoint(peer);
  facts.local_port = endpoint(local).port;
  return config::match_rule(policy, facts);
}

TEST(Advise, NagleOnTheClientThatSplitsItsRequests) {
  const Advice advice = advise({"nagle-client.jsonl", "nagle-server.jsonl"});
  ASSERT_EQ(advice.findings.size(), 1U);
  const Finding& finding = advice.findings.front();
  EXPECT_EQ(finding.cause_code, "nagle-delayed-ack");
  EXPECT_EQ(finding.id, "nagle-delayed-ack@rpc:client:127.0.0.1:15001");
  EXPECT_EQ(finding.tune, "this");
  EXPECT_EQ(finding.connections, 1U);
  EXPECT_EQ(finding.writes, 200U);
  EXPECT_EQ(finding.peers, std::vector<std::string>{"127.0.0.1:15001"});
  EXPECT_EQ(finding.rule.scope.match_toml(),
            R"({ peer = "127.0.0.1", port = 15001, role = "client", program = "rpc" })");
  EXPECT_EQ(key_value(finding, "nodelay"), "\"on\"");
  // 44.1 ms of ack latency over a 0.035 ms floor: the stall per exchange.
  EXPECT_NE(finding.gain_arithmetic.find("44.1 ms - RTT floor 0.035 ms = 44.1 ms"), std::string::npos)
      << finding.gain_arithmetic;
  EXPECT_EQ(finding.prove, "tcptune ab --runs 5 --policy advised.toml -- rpc ARGS...");

  const config::Policy policy = load_advised(advice);
  ASSERT_EQ(policy.rules.size(), 1U);
  EXPECT_EQ(matching_rule(policy, config::Role::client, "rpc", "127.0.0.1:51000", "127.0.0.1:15001"), 0);
  // Not the server side, not another destination, not another program.
  EXPECT_EQ(matching_rule(policy, config::Role::server, "rpc", "127.0.0.1:15001", "127.0.0.1:51000"), -1);
  EXPECT_EQ(matching_rule(policy, config::Role::client, "rpc", "127.0.0.1:51000", "127.0.0.2:15001"), -1);
  EXPECT_EQ(matching_rule(policy, config::Role::client, "curl", "127.0.0.1:51000", "127.0.0.1:15001"), -1);
}

// A program talking to its own server on a port the kernel picked (bound to port 0; recorded by
// `tcptune run --observe -- nagle_pair 20`): the next run gets another port, so the rule leaves it out.
TEST(Advise, AnEphemeralPortIsLeftOutOfTheRule) {
  const Advice advice = advise({"nagle-ephemeral-port.jsonl"});
  ASSERT_EQ(advice.findings.size(), 1U);
  const Finding& finding = advice.findings.front();
  EXPECT_EQ(finding.cause_code, "nagle-delayed-ack");
  EXPECT_EQ(finding.id, "nagle-delayed-ack@nagle_pair:client:127.0.0.1");
  EXPECT_EQ(finding.rule.scope.match_toml(), R"({ peer = "127.0.0.1", role = "client", program = "nagle_pair" })");
  EXPECT_NE(finding.rule.scope.describe().find("45481 left out: in the ephemeral range"), std::string::npos)
      << finding.rule.scope.describe();
  const config::Policy policy = load_advised(advice);
  ASSERT_EQ(policy.rules.size(), 1U);
  EXPECT_EQ(matching_rule(policy, config::Role::client, "nagle_pair", "127.0.0.1:51000", "127.0.0.1:39123"), 0);
}

TEST(Advise, NagleOnTheServerWhenTheClientIsAlreadyTuned) {
  const Advice advice = advise({"nagle-peer-client.jsonl", "nagle-peer-server.jsonl"});
  ASSERT_EQ(advice.findings.size(), 1U);
  const Finding& finding = advice.findings.front();
  EXPECT_EQ(finding.cause_code, "nagle-delayed-ack");
  EXPECT_EQ(finding.tune, "peer");
  EXPECT_EQ(finding.programs, std::vector<std::string>{"shop-server"});
  EXPECT_NE(finding.cause.find("tune shop-server"), std::string::npos) << finding.cause;
  EXPECT_NE(finding.evidence.find("already have TCP_NODELAY on"), std::string::npos) << finding.evidence;
  EXPECT_EQ(finding.rule.scope.match_toml(), R"({ port = 8300, role = "server", program = "shop-server" })");
  const config::Policy policy = load_advised(advice);
  EXPECT_EQ(matching_rule(policy, config::Role::server, "shop-server", "198.18.0.2:8300", "198.18.0.9:40000"), 0);
  EXPECT_EQ(matching_rule(policy, config::Role::client, "shop-client", "198.18.0.1:40100", "198.18.0.2:8300"), -1);
}

TEST(Advise, NagleWithoutThePeersLogSaysSo) {
  const Advice advice = advise({"nagle-client.jsonl"});
  ASSERT_EQ(advice.findings.size(), 1U);
  EXPECT_NE(advice.findings.front().evidence.find("the other end's log was not given"), std::string::npos);
}

TEST(Advise, SlowStartAfterIdleKeepWarmByPortElseBbr) {
  const Advice advice = advise({"idle-restart.jsonl"});
  const std::vector<const Finding*> found = with_cause(advice, "slow-start-after-idle");
  ASSERT_EQ(found.size(), 2U);
  ASSERT_EQ(advice.findings.size(), 2U);
  const auto by_program = [&](const std::string& program) {
    return *std::find_if(found.begin(), found.end(),
                         [&](const Finding* finding) { return finding->programs.front() == program; });
  };
  const Finding& bursty = *by_program("bursty");
  EXPECT_EQ(key_value(bursty, "congestion"), "\"bbr\"");
  // 5 restarts x 2 extra round trips x 180.5 ms.
  EXPECT_NE(
      bursty.gain_arithmetic.find("10 extra round trips x RTT 180 ms = 1805 ms over 5 messages, 361 ms per message"),
      std::string::npos)
      << bursty.gain_arithmetic;
  EXPECT_FALSE(bursty.alternatives.empty());
  const Finding& worker = *by_program("worker");
  EXPECT_EQ(key_value(worker, "keep_warm"), "{ protocol = \"redis-client\" }");
  EXPECT_NE(worker.fix.find("heartbeats"), std::string::npos);
  EXPECT_NE(worker.alternatives.front().find("bbr"), std::string::npos);
  const config::Policy policy = load_advised(advice);
  EXPECT_EQ(policy.rules.size(), 2U);
}

// The bytes a protocol skips cannot be read from a log: given by the user (advise --heartbeat),
// they turn a port without a preset from BBR to keep_warm; a preset's port keeps its preset.
TEST(Advise, HeartbeatBytesTheUserNamesGiveKeepWarmWhereNoPresetFits) {
  Advice advice;
  std::string error;
  ASSERT_TRUE(read_observations({fixture("idle-restart.jsonl")}, advice.observations, error)) << error;
  advice.findings = find_all({advice.observations, "advised.toml", "\n"});
  ASSERT_EQ(advice.findings.size(), 2U);
  for (const Finding& finding : advice.findings) {
    if (finding.programs.front() == "bursty") {
      EXPECT_EQ(key_value(finding, "keep_warm"), "{ heartbeat = \"\\n\" }");
      EXPECT_NE(finding.fix.find("--heartbeat names bytes its peers skip"), std::string::npos) << finding.fix;
      EXPECT_NE(finding.gain.find("as net.ipv4.tcp_slow_start_after_idle=0 gives"), std::string::npos);
    } else {
      EXPECT_EQ(key_value(finding, "keep_warm"), "{ protocol = \"redis-client\" }");
    }
  }
  const config::Policy policy = load_advised(advice);
  ASSERT_EQ(policy.rules.size(), 2U);
  const auto bursty = std::find_if(policy.rules.begin(), policy.rules.end(), [](const config::Rule& rule) {
    return rule.effective.keep_warm.has_value() && rule.effective.keep_warm->protocol.empty();
  });
  ASSERT_NE(bursty, policy.rules.end());
  EXPECT_EQ(bursty->effective.keep_warm->payload, "\n");

  // Bytes a TOML string cannot hold as they are go as heartbeat_hex.
  Advice binary;
  binary.observations = advice.observations;
  binary.findings = find_all({binary.observations, "advised.toml", std::string("\x01\xce", 2)});
  const auto hex = std::find_if(binary.findings.begin(), binary.findings.end(),
                                [](const Finding& finding) { return finding.programs.front() == "bursty"; });
  ASSERT_NE(hex, binary.findings.end());
  EXPECT_EQ(key_value(*hex, "keep_warm"), "{ heartbeat_hex = \"01ce\" }");
  const config::Policy binary_policy = load_advised(binary);
  EXPECT_EQ(binary_policy.rules.size(), 2U);
}

double figure(const Finding& finding, const std::string& name) {
  for (const auto& [key, value] : finding.figures) {
    if (key == name) {
      return value;
    }
  }
  return -1;
}

// The Go sender of the bursty story, observed over the 180 ms link (`tcptune run --observe --
// bursty_send send ...`, supervised): its restarts come from the supervisor's polls, which do not
// see the write, so they carry no extra_round_trips. Estimated for 252 / (3 + 1) = 63 segments per
// burst: from 17 (136 halved three times), 10 and 13 segments, against 136, 59 and 52 warm: 2 + 1 + 1.
TEST(Advise, SlowStartSeenBySupervisorIsEstimatedFromTheSegmentsPerBurst) {
  const Advice advice = advise({"idle-restart-supervised.jsonl"});
  ASSERT_EQ(advice.findings.size(), 1U);
  const Finding& finding = advice.findings.front();
  EXPECT_EQ(finding.cause_code, "slow-start-after-idle");
  EXPECT_EQ(finding.id, "slow-start-after-idle@bursty_send:client:198.18.0.2:16119");
  EXPECT_EQ(key_value(finding, "congestion"), "\"bbr\"");
  EXPECT_EQ(figure(finding, "estimated_restarts"), 3);
  EXPECT_EQ(figure(finding, "extra_round_trips"), 4);
  EXPECT_NE(finding.evidence.find("estimated for messages of 63 segments"), std::string::npos) << finding.evidence;
  EXPECT_NE(finding.gain_arithmetic.find("4 extra round trips x RTT 180 ms = 721 ms over 3 messages"),
            std::string::npos)
      << finding.gain_arithmetic;
  EXPECT_NE(finding.fix.find("runs supervised"), std::string::npos) << finding.fix;
  // The heartbeat alternative is not offered: supervised mode refuses keep_warm.
  for (const std::string& alternative : finding.alternatives) {
    EXPECT_EQ(alternative.find("keep_warm"), std::string::npos) << alternative;
  }
  const config::Policy policy = load_advised(advice);
  ASSERT_EQ(policy.rules.size(), 1U);
  EXPECT_EQ(matching_rule(policy, config::Role::client, "bursty_send", "198.18.0.1:50288", "198.18.0.2:16119"), 0);
  // Its writes are unseen: the report says what it could not judge, rather than staying silent.
  const nlohmann::ordered_json json = findings_json(advice.findings, advice.observations);
  ASSERT_TRUE(json["not_judged"].is_string());
  EXPECT_NE(json["not_judged"].get<std::string>().find("of bursty_send tuned from outside (supervised)"),
            std::string::npos)
      << json["not_judged"];
}

// Two supervised clients of a Redis port: keep_warm's redis-client preset would fit the port, but
// supervised mode refuses keep_warm, so the one whose 100-segment bursts restart gets BBR; the
// other's 8-segment bursts fit the restarted window of 10, cost nothing, and get no finding.
TEST(Advise, SupervisedRestartsGetBbrOnAPresetPortAndNoneWhenTheMessagesFitTheWindow) {
  const Advice advice = advise({"idle-restart-supervised-preset-port.jsonl"});
  ASSERT_EQ(advice.findings.size(), 1U);
  const Finding& finding = advice.findings.front();
  EXPECT_EQ(finding.programs, std::vector<std::string>{"cacheload"});
  EXPECT_EQ(key_value(finding, "congestion"), "\"bbr\"");
  EXPECT_TRUE(key_value(finding, "keep_warm").empty());
  // 120 halved to 7 by 2 s of silence at a 250 ms RTO, so 10: 4 round trips for 100 segments, 1 warm.
  EXPECT_NE(finding.gain_arithmetic.find("9 extra round trips x RTT 40.1 ms = 361 ms over 3 messages"),
            std::string::npos)
      << finding.gain_arithmetic;
  load_advised(advice);
}

TEST(Advise, ReceiveWindowIsThePeersToFix) {
  const Advice advice = advise({"rwnd-sender.jsonl", "rwnd-receiver.jsonl"});
  ASSERT_EQ(advice.findings.size(), 1U);
  const Finding& finding = advice.findings.front();
  EXPECT_EQ(finding.cause_code, "receive-window-limited");
  EXPECT_EQ(finding.tune, "peer");
  EXPECT_EQ(key_value(finding, "override_app_buffers"), "true");
  EXPECT_EQ(finding.rule.scope.match_toml(), R"({ port = 15003, role = "server", program = "bulk" })");
  EXPECT_NE(finding.gain_arithmetic.find("19.40 s of 19.99 s"), std::string::npos) << finding.gain_arithmetic;
  const config::Policy policy = load_advised(advice);
  EXPECT_EQ(matching_rule(policy, config::Role::server, "bulk", "198.18.0.2:15003", "198.18.0.1:40400"), 0);
}

// A receiver that reads slowly (recorded: python3 reading 64 KiB every 5 ms on loopback, its buffer
// left to autotuning) closes its window too, but under 1 KB was in flight per round trip: no
// buffer size helps, and a buffers rule sized from that rate would shrink the autotuned buffer.
// The same sender over a 100 ms path (930 KB in flight per round trip) is window-bound.
TEST(Advise, ASlowReaderIsNotAReceiveWindowTooSmall) {
  const Advice advice = advise({"slow-reader-sender.jsonl", "slow-reader-receiver.jsonl"});
  EXPECT_TRUE(advice.findings.empty()) << advice.findings.front().id;

  std::ifstream in(fixture("slow-reader-sender.jsonl"));
  std::stringstream text;
  text << in.rdbuf();
  std::string log = text.str();
  const std::size_t at = log.find(R"("min_rtt_us":41,)");
  ASSERT_NE(at, std::string::npos);
  log.replace(at, 16, R"("min_rtt_us":100000,)");
  const TempLog far_sender(log);
  Observations observations;
  std::string error;
  ASSERT_TRUE(read_observations({far_sender.path(), fixture("slow-reader-receiver.jsonl")}, observations, error));
  const std::vector<Finding> findings = find_all({observations, "advised.toml", ""});
  ASSERT_EQ(findings.size(), 1U);
  EXPECT_EQ(findings.front().cause_code, "receive-window-limited");
}

TEST(Advise, ReceiveWindowWithoutTheReceiversLogNamesNoProgram) {
  const Advice advice = advise({"rwnd-sender.jsonl"});
  ASSERT_EQ(advice.findings.size(), 1U);
  EXPECT_EQ(advice.findings.front().rule.scope.match_toml(), R"({ port = 15003, role = "server" })");
  EXPECT_NE(advice.findings.front().fix.find("its log was not given"), std::string::npos);
  load_advised(advice);
}

TEST(Advise, SendBufferPinnedByTheApp) {
  const Advice advice = advise({"sndbuf-limited.jsonl"});
  ASSERT_EQ(advice.findings.size(), 1U);
  const Finding& finding = advice.findings.front();
  EXPECT_EQ(finding.cause_code, "send-buffer-limited");
  EXPECT_EQ(finding.tune, "this");
  EXPECT_EQ(key_value(finding, "override_app_buffers"), "true");
  EXPECT_EQ(finding.rule.scope.match_toml(),
            R"({ peer = "203.0.113.9", port = 873, role = "client", program = "backup" })");
  load_advised(advice);
}

TEST(Advise, OptionsNotAsRequested) {
  const Advice advice = advise({"options-not-as-requested.jsonl"});
  const std::vector<const Finding*> found = with_cause(advice, "option-not-as-requested");
  ASSERT_EQ(found.size(), 3U);
  ASSERT_EQ(advice.findings.size(), 3U);
  std::vector<std::string> ids;
  for (const Finding* finding : found) {
    ids.push_back(finding->id);
    EXPECT_EQ(finding->connections, 3U);
  }
  std::sort(ids.begin(), ids.end());
  EXPECT_EQ(ids,
            (std::vector<std::string>{"option-not-as-requested@fetcher:client:198.18.0.2:443:congestion:not_permitted",
                                      "option-not-as-requested@fetcher:client:198.18.0.2:443:nodelay:app_set",
                                      "option-not-as-requested@fetcher:client:198.18.0.2:443:rcvbuf:capped"}));
  for (const Finding* finding : found) {
    if (finding->id.find("nodelay") != std::string::npos) {
      EXPECT_TRUE(finding->has_rule);
      EXPECT_EQ(key_value(*finding, "nodelay"), "\"force\"");
    } else if (finding->id.find("congestion") != std::string::npos) {
      EXPECT_FALSE(finding->has_rule);
      EXPECT_NE(finding->fix.find("net.ipv4.tcp_allowed_congestion_control"), std::string::npos);
    } else {
      EXPECT_FALSE(finding->has_rule);
      EXPECT_NE(finding->fix.find("net.core.rmem_max"), std::string::npos);
    }
  }
  const config::Policy policy = load_advised(advice);
  EXPECT_EQ(policy.rules.size(), 1U);
}

TEST(Advise, ResetAfterIdleGetsKeepaliveBelowTheSilence) {
  const Advice advice = advise({"reset-after-idle.jsonl"});
  ASSERT_EQ(advice.findings.size(), 1U);
  const Finding& finding = advice.findings.front();
  EXPECT_EQ(finding.cause_code, "reset-after-idle");
  // 600 s of silence before the write that met the reset: probes after 300 s.
  EXPECT_EQ(key_value(finding, "keepalive"), "{ idle = \"300s\", interval = \"30s\", count = 4 }");
  const config::Policy policy = load_advised(advice);
  ASSERT_EQ(policy.rules.size(), 1U);
  ASSERT_TRUE(policy.rules[0].tuning.keepalive.has_value());
  EXPECT_EQ(policy.rules[0].tuning.keepalive->idle, std::chrono::seconds(300));
}

TEST(Advise, LossIsNotForTcptune) {
  const Advice advice = advise({"loss.jsonl"});
  ASSERT_EQ(advice.findings.size(), 1U);
  const Finding& finding = advice.findings.front();
  EXPECT_EQ(finding.cause_code, "loss-bound");
  EXPECT_FALSE(finding.has_rule);
  EXPECT_TRUE(finding.prove.empty());
  EXPECT_NE(finding.title.find("tcptune cannot fix"), std::string::npos);
  EXPECT_NE(finding.evidence.find("300 retransmissions of 5000 data segments sent (6.0%)"), std::string::npos)
      << finding.evidence;
  // 7.2 MB in 29 s busy against 1448 x 8 / 60 ms x 1.22 / sqrt(6%).
  EXPECT_NE(finding.evidence.find("sent at 1.99 Mbit/s while busy, about what that loss allows (0.96 Mbit/s"),
            std::string::npos)
      << finding.evidence;
  EXPECT_TRUE(advised_policy(advice.findings, {"loss.jsonl"}).empty());
}

// A healthy bulk transfer over the emulated 100 ms, 100 Mbit/s link (the receiver autotuning,
// `tcptune run --observe`, 5 s): cubic's slow start overshot the drop-tail queue once, 912 of
// 37,085 segments were sent again (2.5%), and the transfer still ran at 80 Mbit/s, 144 times
// what a path losing that share would allow. Not a loss-bound path.
TEST(Advise, ASlowStartOvershootIsNotALossBoundPath) {
  const Advice advice = advise({"overshoot-sender.jsonl", "overshoot-receiver.jsonl"});
  EXPECT_TRUE(advice.findings.empty()) << advice.findings.front().id << ": " << advice.findings.front().evidence;
}

TEST(Advise, HealthyProgramsGetNoFinding) {
  for (const char* name : {"healthy.jsonl", "nagle-server.jsonl", "rwnd-receiver.jsonl"}) {
    const Advice advice = advise({name});
    EXPECT_TRUE(advice.findings.empty()) << name << ": " << advice.findings.front().id;
    EXPECT_TRUE(advised_policy(advice.findings, {name}).empty());
  }
  Observations observations;
  std::string error;
  ASSERT_TRUE(read_observations({TCPTUNE_SOURCE_DIR "/tests/cli/fixtures/probe-two-runs.jsonl",
                                 TCPTUNE_SOURCE_DIR "/tests/cli/fixtures/close-burst-dropped.jsonl"},
                                observations, error));
  EXPECT_TRUE(find_all({observations, "advised.toml", ""}).empty());
}

TEST(Advise, EveryCauseAtOnceInOneLoadablePolicyWithStableIds) {
  const std::vector<std::string> all = {
      "nagle-client.jsonl",      "nagle-server.jsonl",   "nagle-peer-client.jsonl",
      "nagle-peer-server.jsonl", "idle-restart.jsonl",   "rwnd-sender.jsonl",
      "rwnd-receiver.jsonl",     "sndbuf-limited.jsonl", "options-not-as-requested.jsonl",
      "reset-after-idle.jsonl",  "loss.jsonl",           "healthy.jsonl"};
  const Advice advice = advise(all);
  std::vector<std::string> reversed_names(all.rbegin(), all.rend());
  const Advice reversed = advise(reversed_names);
  ASSERT_EQ(advice.findings.size(), reversed.findings.size());
  for (std::size_t i = 0; i < advice.findings.size(); ++i) {
    EXPECT_EQ(advice.findings[i].id, reversed.findings[i].id);
  }
  EXPECT_EQ(advice.findings.size(), 11U);
  const config::Policy policy = load_advised(advice);
  EXPECT_EQ(policy.rules.size(), advised_rules(advice.findings).size());

  const nlohmann::ordered_json json = findings_json(advice.findings, advice.observations);
  EXPECT_TRUE(json["not_judged"].is_null());  // every write of these logs measured
  ASSERT_TRUE(json["findings"].is_array());
  EXPECT_EQ(json["findings"].size(), advice.findings.size());
  for (const auto& finding : json["findings"]) {
    EXPECT_TRUE(finding["id"].is_string());
    EXPECT_TRUE(finding["evidence"]["connections"].is_number());
    EXPECT_TRUE(finding["expected_gain"]["arithmetic"].is_string());
    EXPECT_TRUE(finding["fix"]["rule"].is_null() || finding["fix"]["rule"]["toml"].is_string());
  }
}

TEST(Advise, BroaderRulesKeysReachTheNarrowerRuleThatComesFirst) {
  Finding wide;
  wide.has_rule = true;
  wide.id = "wide";
  wide.rule.scope.programs = {"app"};
  wide.rule.scope.role = "client";
  wide.rule.keys = {{"congestion", "\"bbr\""}};
  Finding narrow = wide;
  narrow.id = "narrow";
  narrow.rule.scope.ports = {6379};
  narrow.rule.keys = {{"nodelay", "\"on\""}};
  const std::vector<WrittenRule> rules = advised_rules({wide, narrow});
  ASSERT_EQ(rules.size(), 2U);
  EXPECT_EQ(rules[0].scope.ports, std::vector<std::uint16_t>{6379});
  EXPECT_EQ(rules[0].keys.size(), 2U);
  const config::LoadResult loaded = config::load_policy_text(advised_policy({wide, narrow}, {"x"}), "p.toml");
  ASSERT_TRUE(loaded.ok());
}

// A program's name and a log's path may hold control characters (a process renames itself with
// prctl; a file name is any bytes): the policy's comments must still be TOML, and the rule match it.
TEST(Advise, ControlCharactersInANameOrPathStillGiveALoadablePolicy) {
  std::ifstream in(fixture("nagle-client.jsonl"));
  std::stringstream text;
  text << in.rdbuf();
  std::string log = text.str();
  for (std::size_t at = log.find(R"("program":"rpc")"); at != std::string::npos;
       at = log.find(R"("program":"rpc")", at + 1)) {
    log.replace(at, 15, R"("program":"r\u001bpc\r")");
  }
  const TempLog renamed(log);
  Observations observations;
  std::string error;
  ASSERT_TRUE(read_observations({renamed.path()}, observations, error)) << error;
  const std::vector<Finding> findings = find_all({observations, "advised.toml", ""});
  ASSERT_EQ(findings.size(), 1U);
  const std::string policy = advised_policy(findings, {renamed.path() + "\r\x01", "bad\xff\xfename.jsonl"});
  const config::LoadResult loaded = config::load_policy_text(policy, "advised.toml");
  ASSERT_TRUE(loaded.ok()) << loaded.error().to_string() << "\n" << policy;
  EXPECT_EQ(matching_rule(loaded.policy(), config::Role::client, "r\x1bpc\r", "127.0.0.1:51000", "127.0.0.1:15001"), 0);
  EXPECT_NE(policy.find("\\x1b"), std::string::npos) << policy;
}

// A line that is not a record (a number JSON cannot hold, bytes of another file, a last line cut
// by kill -9) is left out and named with its file and line, on stderr: its evidence is missing.
TEST(Advise, CommandNamesTheLinesItLeftOut) {
  std::ifstream in(fixture("nagle-client.jsonl"));
  std::stringstream text;
  text << in.rdbuf();
  std::string log = text.str();
  std::string overflowing = log;
  overflowing.replace(overflowing.find(R"("p50":44100)"), 11, R"("p50":1e400)");
  const TempLog damaged(overflowing);
  AdviseOptions options;
  options.logs = {damaged.path()};
  testing::internal::CaptureStdout();
  testing::internal::CaptureStderr();
  EXPECT_EQ(advise_command(options), 0);
  std::string out = testing::internal::GetCapturedStdout();
  std::string err = testing::internal::GetCapturedStderr();
  EXPECT_NE(out.find("0 finding(s)"), std::string::npos) << out;
  EXPECT_EQ(err, "tcptune advise: warning: " + damaged.path() +
                     ":3: not a JSON record, left out (1 such line(s) in the file)\n");

  const TempLog cut(log + log.substr(0, 80));
  options.logs = {cut.path()};
  testing::internal::CaptureStdout();
  testing::internal::CaptureStderr();
  EXPECT_EQ(advise_command(options), 0);
  out = testing::internal::GetCapturedStdout();
  err = testing::internal::GetCapturedStderr();
  EXPECT_NE(out.find("1 finding(s)"), std::string::npos) << out;
  EXPECT_EQ(err, "tcptune advise: warning: " + cut.path() +
                     ":5: the last line is not a whole JSON record, left out (a process killed while writing it?)\n");

  options.logs = {fixture("nagle-client.jsonl")};
  testing::internal::CaptureStdout();
  testing::internal::CaptureStderr();
  EXPECT_EQ(advise_command(options), 0);
  (void)testing::internal::GetCapturedStdout();
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "") << "a whole log: nothing said";
}

// One log given twice (`tcptune advise *.jsonl client.jsonl`, or through a link) is read once: its
// connections counted twice would double the evidence and the expected gain.
TEST(Advise, CommandReadsALogGivenTwiceOnce) {
  const std::string directory = testing::TempDir() + "advise-twice-" + std::to_string(getpid());
  std::filesystem::create_directories(directory);
  const std::string link = directory + "/again.jsonl";
  std::filesystem::create_symlink(fixture("nagle-client.jsonl"), link);
  AdviseOptions options;
  options.logs = {fixture("nagle-client.jsonl"), link, fixture("nagle-client.jsonl")};
  options.json = true;
  testing::internal::CaptureStdout();
  testing::internal::CaptureStderr();
  EXPECT_EQ(advise_command(options), 0);
  const std::string out = testing::internal::GetCapturedStdout();
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(err, "tcptune advise: warning: " + link + " is " + fixture("nagle-client.jsonl") +
                     " again: read once\ntcptune advise: warning: " + fixture("nagle-client.jsonl") + " is " +
                     fixture("nagle-client.jsonl") + " again: read once\n");
  EXPECT_NE(out.find(R"("connections":1,)"), std::string::npos) << out;
  EXPECT_NE(out.find(R"("writes":200,)"), std::string::npos) << out;
  std::filesystem::remove_all(directory);
}

// A finding over many peers names the first eight in the text and counts the rest; --json has all.
TEST(Advise, CommandTextNamesAFewPeersAndCountsTheRest) {
  std::ifstream in(fixture("nagle-client.jsonl"));
  std::stringstream text;
  text << in.rdbuf();
  const std::string one = text.str();
  std::string log;
  for (int peer = 1; peer <= 10; ++peer) {
    std::string connection = one;
    const std::size_t at = connection.find(R"("peer":"127.0.0.1:15001")");
    connection.replace(at, 24, R"("peer":"127.0.0.)" + std::to_string(peer + 1) + R"(:15001")");
    for (std::size_t pid = connection.find(R"("pid":4101)"); pid != std::string::npos;
         pid = connection.find(R"("pid":4101)", pid + 1)) {
      connection.replace(pid, 10, R"("pid":)" + std::to_string(5000 + peer));
    }
    log += connection;
  }
  const TempLog many(log);
  AdviseOptions options;
  options.logs = {many.path()};
  testing::internal::CaptureStdout();
  EXPECT_EQ(advise_command(options), 0);
  std::string out = testing::internal::GetCapturedStdout();
  EXPECT_NE(out.find("10 connection(s)"), std::string::npos) << out;
  EXPECT_NE(out.find("peers 127.0.0.10:15001, 127.0.0.11:15001, 127.0.0.2:15001"), std::string::npos) << out;
  EXPECT_NE(out.find("127.0.0.7:15001 and 2 more (--json lists them all); logs"), std::string::npos) << out;
  options.json = true;
  testing::internal::CaptureStdout();
  EXPECT_EQ(advise_command(options), 0);
  out = testing::internal::GetCapturedStdout();
  EXPECT_NE(out.find(R"("127.0.0.8:15001","127.0.0.9:15001"])"), std::string::npos) << out;
}

// A descriptor's next connection can have its conn_open (written by the connecting thread at once)
// before the close of the one before (written by the shim's worker, later): a close is matched by
// its ends, the worker's records go to the oldest connection still open on the descriptor.
TEST(Advise, AConnOpenBeforeThePreviousCloseOnItsDescriptor) {
  const Advice advice = advise({"reordered-opens.jsonl"});
  ASSERT_EQ(advice.observations.connections.size(), 2U);
  for (const ObservedConnection& connection : advice.observations.connections) {
    ASSERT_TRUE(connection.opened && connection.closed) << connection.peer;
    const ObservedOption* nodelay = connection.option("nodelay");
    ASSERT_NE(nodelay, nullptr);
    EXPECT_EQ(nodelay->effective, connection.peer == "10.0.0.1:15001" ? "1" : "0") << connection.peer;
    EXPECT_EQ(connection.ack_p50_us, connection.peer == "10.0.0.1:15001" ? 90 : 44100) << connection.peer;
  }
  ASSERT_EQ(advice.findings.size(), 1U);
  EXPECT_EQ(advice.findings.front().peers, std::vector<std::string>{"10.0.0.2:15001"});
  EXPECT_NE(advice.findings.front().evidence.find("TCP_NODELAY off (effective 0)"), std::string::npos)
      << advice.findings.front().evidence;

  // A listener's descriptor reused by a client: the client's idle restart is the client's.
  const TempLog reused(
      R"({"pid":7,"program":"p","event":"conn_open","fd":3,"role":"listener","local":"127.0.0.1:80"})"
      "\n"
      R"({"pid":7,"program":"p","event":"conn_open","fd":3,"role":"client","local":"127.0.0.1:40000","peer":"127.0.0.1:9"})"
      "\n"
      R"({"pid":7,"program":"p","event":"idle_restart","fd":3,"idle_ms":900,"rto_ms":200,"rtt_ms":1,"cwnd_before":40,"cwnd_after":10})"
      "\n");
  Observations observations;
  std::string error;
  ASSERT_TRUE(read_observations({reused.path()}, observations, error)) << error;
  ASSERT_EQ(observations.connections.size(), 2U);
  EXPECT_TRUE(observations.connections[0].idle_restarts.empty());
  EXPECT_EQ(observations.connections[1].idle_restarts.size(), 1U);
}

// A supervised server's accepted sockets have no fd in the records: each idle restart names its
// connection by inode (and ends), so restarts of the connection on port 9000 are not given to one
// on port 8000 that closes first.
TEST(Advise, SupervisedAcceptedSocketsAreToldApartByInode) {
  const std::string restart =
      R"j({"pid":9,"program":"srv","event":"idle_restart","local":"198.18.0.1:9000","peer":"198.18.0.2:41000",)j"
      R"j("inode":202,"idle_ms":1452,"rto_ms":452,"rtt_ms":180.2,"cwnd_before":136,"cwnd_after":17,)j"
      R"j("supervised":true})j"
      "\n";
  const auto close = [](const std::string& local, const std::string& peer, int inode, int restarts) {
    return R"j({"pid":9,"program":"srv","event":"conn_close","role":"server","local":")j" + local + R"j(","peer":")j" +
           peer + R"j(","duration_s":9,"supervised":true,"writes_measured":false,)j" + R"j("idle_restarts":)j" +
           std::to_string(restarts) + R"j(,"inode":)j" + std::to_string(inode) +
           R"j(,"tcp_info":{"rtt_us":181000,"cwnd":55,"mss":1448,"retransmits":0,"min_rtt_us":180000,)j"
           R"j("data_segs_out":400}})j"
           "\n";
  };
  const TempLog log(
      R"j({"pid":9,"program":"srv","event":"conn_open","fd":3,"role":"listener","local":"198.18.0.1:8000","inode":100})j"
      "\n"
      R"j({"pid":9,"program":"srv","event":"conn_open","fd":4,"role":"listener","local":"198.18.0.1:9000","inode":101})j"
      "\n" +
      restart + restart + restart + close("198.18.0.1:8000", "198.18.0.3:42000", 201, 0) +
      close("198.18.0.1:9000", "198.18.0.2:41000", 202, 3));
  Observations observations;
  std::string error;
  ASSERT_TRUE(read_observations({log.path()}, observations, error)) << error;
  const std::vector<Finding> findings = find_all({observations, "advised.toml", ""});
  ASSERT_EQ(findings.size(), 1U);
  EXPECT_EQ(findings.front().id, "slow-start-after-idle@srv:server:9000");
  EXPECT_EQ(findings.front().connections, 1U);
}

// The command: --output writes a policy only when there is something to change.
TEST(Advise, CommandWritesThePolicyOnlyWhenThereIsSomethingToChange) {
  const std::string directory = testing::TempDir() + "advise-command-" + std::to_string(getpid());
  std::filesystem::create_directories(directory);
  AdviseOptions options;
  options.logs = {fixture("healthy.jsonl")};
  options.output = directory + "/healthy.toml";
  options.json = true;
  EXPECT_EQ(advise_command(options), 0);
  EXPECT_FALSE(std::filesystem::exists(options.output));

  options.logs = {fixture("nagle-client.jsonl")};
  options.output = directory + "/nagle.toml";
  options.json = false;
  EXPECT_EQ(advise_command(options), 0);
  ASSERT_TRUE(std::filesystem::exists(options.output));
  const config::LoadResult loaded = config::load_policy_file(options.output);
  ASSERT_TRUE(loaded.ok());
  EXPECT_EQ(loaded.policy().rules.size(), 1U);
  std::ifstream in(options.output);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_NE(text.str().find("# nagle-delayed-ack@rpc:client:127.0.0.1:15001"), std::string::npos) << text.str();

  // --output naming one of the logs: refused before anything is read or written.
  std::filesystem::copy_file(fixture("nagle-client.jsonl"), directory + "/victim.jsonl");
  options.logs = {fixture("healthy.jsonl"), directory + "/victim.jsonl"};
  options.output = directory + "/./victim.jsonl";
  testing::internal::CaptureStderr();
  EXPECT_EQ(advise_command(options), kExitUsage);
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "tcptune advise: --output " + options.output + " is the log " +
                                                        directory + "/victim.jsonl: the policy would replace it\n");
  std::ifstream victim(directory + "/victim.jsonl");
  std::stringstream victim_text;
  victim_text << victim.rdbuf();
  std::ifstream original(fixture("nagle-client.jsonl"));
  std::stringstream original_text;
  original_text << original.rdbuf();
  EXPECT_EQ(victim_text.str(), original_text.str()) << "the log is left as it was";
  options.output = directory + "/nagle.toml";

  const TempLog text_log("2026-12-03 a text line\n");
  options.logs = {text_log.path()};
  EXPECT_EQ(advise_command(options), 1);
  std::filesystem::remove_all(directory);
}

}  // namespace
}  // namespace tcptune::cli
