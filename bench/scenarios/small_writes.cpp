// The other side of the Nagle story: a program that streams many small writes and never waits
// between them (a logger, a metrics or telemetry exporter, a serializer writing field by
// field). Nagle coalesces its writes into full segments; TCP_NODELAY sends one segment per
// write, several times slower on loopback.
//
//   small_writes receive --listen 127.0.0.1:5003
//   small_writes send --connect 127.0.0.1:5003 [--writes 1000000] [--size 16] [--nodelay]
//
// The sender prints one JSON line once the receiver has read every byte and closed: the time
// from its first write to the receiver's close (so bytes still queued are counted), and the
// segments it sent (TCP_INFO tcpi_segs_out), which show the coalescing whatever the load.
#include <linux/tcp.h>  // struct tcp_info with tcpi_segs_out
#include <netinet/in.h>
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

int receive(const ScenarioArgs& args) {
  const std::string endpoint = args.text("listen", "127.0.0.1:5003");
  args.reject_unused();
  const int listener = tcptune::bench::listen_on(endpoint, 0);
  const int fd = tcptune::bench::accept_one(listener);
  std::vector<char> buffer(256 * 1024);
  while (read(fd, buffer.data(), buffer.size()) > 0) {
  }
  close(fd);
  return 0;
}

int send(const ScenarioArgs& args) {
  const std::string endpoint = args.text("connect", "127.0.0.1:5003");
  const std::uint64_t writes = args.count("writes", 1000000);
  const std::uint64_t size = args.size_bytes("size", 16);
  const bool nodelay = args.flag("nodelay");
  args.reject_unused();
  const int fd = tcptune::bench::connect_to(endpoint);
  if (nodelay) {
    tcptune::bench::set_nodelay(fd);
  }
  const std::vector<char> record(size, 'r');
  const long long start = tcptune::bench::monotonic_ns();
  for (std::uint64_t i = 0; i < writes; ++i) {
    if (!tcptune::bench::write_all(fd, record.data(), record.size())) {
      std::perror("small_writes: write");
      return 1;
    }
  }
  shutdown(fd, SHUT_WR);
  char end = 0;
  while (read(fd, &end, 1) > 0) {  // until the receiver has read everything and closed
  }
  const double elapsed_s = static_cast<double>(tcptune::bench::monotonic_ns() - start) / 1e9;
  // Segments sent (handshake and FIN included): how far the writes were coalesced.
  tcp_info info{};
  socklen_t info_len = sizeof info;
  const unsigned long long segments =
      getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &info_len) == 0 ? info.tcpi_segs_out : 0;
  close(fd);
  std::printf(
      R"({"scenario":"small_writes","role":"send","writes":%llu,"size":%llu,"seconds":%.4f,"writes_per_s":%.0f,)"
      R"("segments":%llu})"
      "\n",
      static_cast<unsigned long long>(writes), static_cast<unsigned long long>(size), elapsed_s,
      static_cast<double>(writes) / elapsed_s, segments);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const ScenarioArgs args("small_writes", argc, argv);
  if (args.role() == "receive") {
    return receive(args);
  }
  if (args.role() == "send") {
    return send(args);
  }
  args.fail("role must be receive or send");
}
