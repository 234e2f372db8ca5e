// The Nagle story: the client writes a 10-byte header and a 100-byte body as two writes and
// reads the reply; the server replies once it has the whole request. Without TCP_NODELAY the
// body waits for the header's ACK, which the server delays (about 40 ms on Linux).
//
//   rpc serve --listen 198.18.0.2:5002 [--connections 1] [--nodelay]
//   rpc call --connect 198.18.0.2:5002 [--requests 200] [--nodelay]
//
// The client prints one JSON line: per-request latency percentiles and requests per second.
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include <unistd.h>

#include "latency_summary.hpp"
#include "scenario_args.hpp"
#include "scenario_socket.hpp"

namespace {

using tcptune::bench::ScenarioArgs;

constexpr std::size_t kHeaderBytes = 10;
constexpr std::size_t kBodyBytes = 100;
constexpr std::size_t kReplyBytes = 16;

int serve(const ScenarioArgs& args) {
  const std::string endpoint = args.text("listen", "0.0.0.0:5002");
  const std::uint64_t connections = args.count("connections", 1);
  const bool nodelay = args.flag("nodelay");
  args.reject_unused();
  const int listener = tcptune::bench::listen_on(endpoint, 0);
  char request[kHeaderBytes + kBodyBytes];
  char reply[kReplyBytes] = "ok";
  for (std::uint64_t served = 0; served < connections; ++served) {
    const int fd = tcptune::bench::accept_one(listener);
    if (nodelay) {
      tcptune::bench::set_nodelay(fd);
    }
    while (tcptune::bench::read_exactly(fd, request, sizeof request) &&
           tcptune::bench::write_all(fd, reply, sizeof reply)) {
    }
    close(fd);
  }
  return 0;
}

int call(const ScenarioArgs& args) {
  const std::string endpoint = args.text("connect", "198.18.0.2:5002");
  const std::uint64_t requests = args.count("requests", 200);
  const bool nodelay = args.flag("nodelay");
  args.reject_unused();
  const int fd = tcptune::bench::connect_to(endpoint);
  if (nodelay) {
    tcptune::bench::set_nodelay(fd);
  }
  char header[kHeaderBytes];
  char body[kBodyBytes];
  char reply[kReplyBytes];
  std::memset(header, 'h', sizeof header);
  std::memset(body, 'b', sizeof body);
  std::vector<double> latencies_ms;
  latencies_ms.reserve(requests);
  const long long first = tcptune::bench::monotonic_ns();
  for (std::uint64_t i = 0; i < requests; ++i) {
    const long long start = tcptune::bench::monotonic_ns();
    if (!tcptune::bench::write_all(fd, header, sizeof header) || !tcptune::bench::write_all(fd, body, sizeof body) ||
        !tcptune::bench::read_exactly(fd, reply, sizeof reply)) {
      std::perror("rpc: request");
      return 1;
    }
    latencies_ms.push_back(static_cast<double>(tcptune::bench::monotonic_ns() - start) / 1e6);
  }
  const double elapsed_s = static_cast<double>(tcptune::bench::monotonic_ns() - first) / 1e9;
  close(fd);
  std::printf(R"({"scenario":"rpc","role":"call","requests":%llu,"requests_per_s":%.1f,"latency_ms":%s})"
              "\n",
              static_cast<unsigned long long>(requests), static_cast<double>(requests) / elapsed_s,
              tcptune::bench::summary_json(latencies_ms).c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const ScenarioArgs args("rpc", argc, argv);
  if (args.role() == "serve") {
    return serve(args);
  }
  if (args.role() == "call") {
    return call(args);
  }
  args.fail("role must be serve or call");
}
