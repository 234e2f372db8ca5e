// The messaging story: S-byte messages after idle gaps of G seconds over one long-lived
// connection. The receiver records each message's one-way latency, from just before the
// sender's write() to the arrival of its last byte (CLOCK_MONOTONIC is shared across the
// host's network namespaces), and prints one JSON line at the end of the stream.
//
//   bursty receive --listen 198.18.0.2:5001
//   bursty send --connect 198.18.0.2:5001 [--size 60KB] [--gap 3s | --gap-min 1s --gap-max 5s]
//               [--count 10] [--warmup 3] [--seed 1] [--nodelay]
//
// Either side may be the one that listens (`send --listen` with `receive --connect` is a
// server pushing to a subscriber). Warm-up messages go back to back first and are not
// counted: they open the congestion window, as the traffic of a long-lived connection would
// have. Like STOMP, the protocol lets either side send newlines between messages as
// heartbeats: the receiver skips them (and counts them), which is what tcptune's keep_warm
// heartbeat relies on. The sender reports the time it spent idle between messages, its
// connection's RTO and TCP_NODELAY at the end, and the congestion window just before each
// counted message (TCP_INFO; the kernel applies a restart after idle only inside the write,
// so a smaller window here is RFC 2861's validation shrinking it during the silence).
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "latency_summary.hpp"
#include "scenario_args.hpp"
#include "scenario_socket.hpp"

namespace {

using tcptune::bench::ScenarioArgs;

constexpr std::uint32_t kMagic = 0x42525354;  // "BRST"
constexpr std::uint32_t kWarmupFlag = 1;
constexpr char kHeartbeat = '\n';

struct MessageHeader {
  std::uint32_t magic;
  std::uint32_t sequence;
  std::uint32_t size;  // of the whole message, header included
  std::uint32_t flags;
  std::int64_t send_ns;
};

// `--listen A:P` accepts one connection, `--connect A:P` opens one.
struct Endpoint {
  bool listens = false;
  std::string address;
};

Endpoint read_endpoint(const ScenarioArgs& args, bool listens_by_default) {
  const std::string listen = args.text("listen", "");
  const std::string connect = args.text("connect", "");
  if (!listen.empty() && !connect.empty()) {
    args.fail("give --listen or --connect, not both");
  }
  if (listen.empty() && connect.empty()) {
    return listens_by_default ? Endpoint{true, "0.0.0.0:5001"} : Endpoint{false, "198.18.0.2:5001"};
  }
  return listen.empty() ? Endpoint{false, connect} : Endpoint{true, listen};
}

int open_connection(const Endpoint& endpoint) {
  return endpoint.listens ? tcptune::bench::accept_one(tcptune::bench::listen_on(endpoint.address, 0))
                          : tcptune::bench::connect_to(endpoint.address);
}

int receive(const ScenarioArgs& args) {
  const Endpoint endpoint = read_endpoint(args, true);
  args.reject_unused();
  const int fd = open_connection(endpoint);
  std::vector<double> latencies_ms;
  std::vector<char> body;
  std::uint32_t size = 0;
  MessageHeader header{};
  std::uint64_t heartbeats = 0;
  // Newlines before a header are heartbeats; the header's first byte is never one.
  const auto read_header = [&] {
    auto* bytes = reinterpret_cast<char*>(&header);
    for (;;) {
      if (!tcptune::bench::read_exactly(fd, bytes, 1)) {
        return false;
      }
      if (bytes[0] != kHeartbeat) {
        break;
      }
      ++heartbeats;
    }
    return tcptune::bench::read_exactly(fd, bytes + 1, sizeof header - 1);
  };
  while (read_header()) {
    if (header.magic != kMagic || header.size < sizeof header) {
      std::fprintf(stderr, "bursty: corrupt message header\n");
      return 1;
    }
    body.resize(header.size - sizeof header);
    if (!tcptune::bench::read_exactly(fd, body.data(), body.size())) {
      std::fprintf(stderr, "bursty: stream ended inside message %u\n", header.sequence);
      return 1;
    }
    const long long arrived = tcptune::bench::monotonic_ns();
    if ((header.flags & kWarmupFlag) == 0) {
      latencies_ms.push_back(static_cast<double>(arrived - header.send_ns) / 1e6);
    }
    size = header.size;
  }
  std::printf(R"({"scenario":"bursty","role":"receive","size":%u,"heartbeats":%llu,"latency_ms":%s,"samples_ms":[)",
              size, static_cast<unsigned long long>(heartbeats), tcptune::bench::summary_json(latencies_ms).c_str());
  for (std::size_t i = 0; i < latencies_ms.size(); ++i) {
    std::printf("%s%.3f", i == 0 ? "" : ",", latencies_ms[i]);
  }
  std::printf("]}\n");
  return latencies_ms.empty() ? 1 : 0;
}

int send(const ScenarioArgs& args) {
  const Endpoint endpoint = read_endpoint(args, false);
  const std::uint64_t size = std::max<std::uint64_t>(args.size_bytes("size", 60'000), sizeof(MessageHeader));
  const double gap = args.seconds("gap", 3.0);
  const double gap_min = args.seconds("gap-min", gap);
  const double gap_max = args.seconds("gap-max", gap_min);
  const std::uint64_t count = args.count("count", 10);
  const std::uint64_t warmup = args.count("warmup", 3);
  const std::uint64_t seed = args.count("seed", 1);
  const bool nodelay = args.flag("nodelay");
  args.reject_unused();
  if (gap_max < gap_min) {
    args.fail("--gap-max is below --gap-min");
  }

  const int fd = open_connection(endpoint);
  if (nodelay) {
    tcptune::bench::set_nodelay(fd);
  }
  std::mt19937_64 random(seed);
  std::uniform_real_distribution<double> gap_distribution(gap_min, gap_max);
  std::vector<char> message(size, 'm');
  long long idle_ns = 0;
  std::vector<std::uint32_t> cwnd_before;
  for (std::uint64_t i = 0; i < warmup + count; ++i) {
    const bool warming = i < warmup;
    if (!warming) {
      const long long before = tcptune::bench::monotonic_ns();
      tcptune::bench::sleep_seconds(gap_distribution(random));
      idle_ns += tcptune::bench::monotonic_ns() - before;
      tcp_info info{};
      socklen_t length = sizeof info;
      cwnd_before.push_back(getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &length) == 0 ? info.tcpi_snd_cwnd : 0);
    }
    MessageHeader header{kMagic, static_cast<std::uint32_t>(i), static_cast<std::uint32_t>(size),
                         warming ? kWarmupFlag : 0, tcptune::bench::monotonic_ns()};
    std::copy_n(reinterpret_cast<const char*>(&header), sizeof header, message.data());
    if (!tcptune::bench::write_all(fd, message.data(), message.size())) {
      std::perror("bursty: write");
      return 1;
    }
  }
  tcp_info info{};
  socklen_t info_length = sizeof info;
  int nodelay_now = 0;
  socklen_t nodelay_length = sizeof nodelay_now;
  if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &info_length) != 0 ||
      getsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &nodelay_now, &nodelay_length) != 0) {
    std::perror("bursty: getsockopt");
    return 1;
  }
  std::printf(R"({"scenario":"bursty","role":"send","messages":%llu,"warmup":%llu,"size":%llu,"idle_s":%.3f,)"
              R"("rto_ms":%.1f,"nodelay":%s,"cwnd_before":[)",
              static_cast<unsigned long long>(count), static_cast<unsigned long long>(warmup),
              static_cast<unsigned long long>(size), static_cast<double>(idle_ns) / 1e9,
              static_cast<double>(info.tcpi_rto) / 1e3, nodelay_now != 0 ? "true" : "false");
  for (std::size_t i = 0; i < cwnd_before.size(); ++i) {
    std::printf("%s%u", i == 0 ? "" : ",", cwnd_before[i]);
  }
  std::printf("]}\n");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const ScenarioArgs args("bursty", argc, argv);
  if (args.role() == "receive") {
    return receive(args);
  }
  if (args.role() == "send") {
    return send(args);
  }
  args.fail("role must be send or receive");
}
