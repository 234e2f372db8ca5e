// The bandwidth-delay story: the receiver pins SO_RCVBUF (64 KiB, a legacy habit) on its
// listener before listen(), so the window can never exceed it; the sender streams for T
// seconds. The receiver prints one JSON line with the goodput, over the whole transfer and
// after the first second (slow start excluded), and the receive buffer it ended up with.
//
//   bulk receive --listen 198.18.0.2:5003 [--rcvbuf 64KiB | --no-pin]
//   bulk send --connect 198.18.0.2:5003 [--duration 10s] [--nodelay]
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "scenario_args.hpp"
#include "scenario_socket.hpp"

namespace {

using tcptune::bench::ScenarioArgs;

constexpr std::size_t kChunkBytes = std::size_t{128} * 1024;

int receive(const ScenarioArgs& args) {
  const std::string endpoint = args.text("listen", "0.0.0.0:5003");
  const bool no_pin = args.flag("no-pin");
  const auto rcvbuf = static_cast<int>(args.size_bytes("rcvbuf", std::uint64_t{64} * 1024));
  args.reject_unused();
  const int listener = tcptune::bench::listen_on(endpoint, no_pin ? 0 : rcvbuf);
  const int fd = tcptune::bench::accept_one(listener);
  std::vector<char> buffer(kChunkBytes);
  std::uint64_t total = 0;
  std::uint64_t after_first_second = 0;
  long long first_byte = 0;
  long long steady_start = 0;
  long long last_byte = 0;
  for (;;) {
    const ssize_t n = read(fd, buffer.data(), buffer.size());
    if (n <= 0) {
      break;
    }
    last_byte = tcptune::bench::monotonic_ns();
    if (first_byte == 0) {
      first_byte = last_byte;
    }
    total += static_cast<std::uint64_t>(n);
    if (last_byte - first_byte >= 1'000'000'000LL) {
      if (steady_start == 0) {
        steady_start = last_byte;
      } else {
        after_first_second += static_cast<std::uint64_t>(n);
      }
    }
  }
  int effective_rcvbuf = 0;
  socklen_t length = sizeof effective_rcvbuf;
  getsockopt(fd, SOL_SOCKET, SO_RCVBUF, &effective_rcvbuf, &length);
  const double seconds = static_cast<double>(last_byte - first_byte) / 1e9;
  const double steady_seconds = static_cast<double>(last_byte - steady_start) / 1e9;
  const double goodput = seconds > 0 ? static_cast<double>(total) * 8 / seconds / 1e6 : 0;
  const double steady = steady_seconds > 0 ? static_cast<double>(after_first_second) * 8 / steady_seconds / 1e6 : 0;
  std::printf(R"({"scenario":"bulk","role":"receive","bytes":%llu,"seconds":%.3f,"goodput_mbit":%.2f,)"
              R"("steady_goodput_mbit":%.2f,"rcvbuf_effective":%d,"rcvbuf_pinned":%d})"
              "\n",
              static_cast<unsigned long long>(total), seconds, goodput, steady, effective_rcvbuf, no_pin ? 0 : rcvbuf);
  return total > 0 ? 0 : 1;
}

int send(const ScenarioArgs& args) {
  const std::string endpoint = args.text("connect", "198.18.0.2:5003");
  const double duration = args.seconds("duration", 10.0);
  const bool nodelay = args.flag("nodelay");
  args.reject_unused();
  const int fd = tcptune::bench::connect_to(endpoint);
  if (nodelay) {
    tcptune::bench::set_nodelay(fd);
  }
  std::vector<char> chunk(kChunkBytes, 'd');
  const long long end = tcptune::bench::monotonic_ns() + static_cast<long long>(duration * 1e9);
  std::uint64_t sent = 0;
  while (tcptune::bench::monotonic_ns() < end) {
    if (!tcptune::bench::write_all(fd, chunk.data(), chunk.size())) {
      std::perror("bulk: write");
      return 1;
    }
    sent += chunk.size();
  }
  close(fd);
  std::printf(R"({"scenario":"bulk","role":"send","bytes":%llu,"duration_s":%.3f})"
              "\n",
              static_cast<unsigned long long>(sent), duration);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const ScenarioArgs args("bulk", argc, argv);
  if (args.role() == "receive") {
    return receive(args);
  }
  if (args.role() == "send") {
    return send(args);
  }
  args.fail("role must be send or receive");
}
