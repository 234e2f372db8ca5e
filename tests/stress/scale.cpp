// Scale: N connections open at once in one process, one frame written on each, then all
// closed in a tight loop; `--rounds R` repeats that, for N x R closes in all. Prints the
// resident memory before and with them open (the harness runs it with and without the shim:
// the difference per connection is the shim's cost) and exactly what it did, for the shim's
// summary to be compared with.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <vector>

#include "frame.hpp"
#include "modes.hpp"

namespace tcptune::stress {

int run_scale(const Args& args) {
  const int port = static_cast<int>(args.number("--port", 0));
  const std::string address = args.text("--address", "127.0.0.1");
  auto wanted = static_cast<std::uint64_t>(args.number("--connections", 20'000));
  const auto payload = static_cast<std::uint32_t>(args.number("--payload", 100));
  const auto seed = static_cast<std::uint64_t>(args.number("--seed", 1));
  const std::int64_t settle_ns = args.number("--settle-ms", 500) * 1'000'000;
  const auto rounds = static_cast<std::uint64_t>(args.number("--rounds", 1));
  if (port == 0 || payload > 65536) {
    die("scale needs --port (and --payload at most 65536)");
  }
  const std::uint64_t limit = raise_fd_limit(wanted + 32);
  if (limit < wanted + 32) {
    die("RLIMIT_NOFILE stays at " + std::to_string(limit) + ", too low for " + std::to_string(wanted) + " connections");
  }
  // Connections alternate between the listeners given: with one destination the kernel's
  // search for a free ephemeral port gets slow once most are taken (even ports first).
  std::vector<sockaddr_in> peers;
  for (const int each : {port, static_cast<int>(args.number("--port2", 0))}) {
    if (each != 0) {
      sockaddr_in& peer = peers.emplace_back();
      peer.sin_family = AF_INET;
      peer.sin_port = htons(static_cast<std::uint16_t>(each));
      inet_pton(AF_INET, address.c_str(), &peer.sin_addr);
    }
  }
  std::vector<std::uint8_t> frame(kHeaderSize + payload);
  std::vector<int> fds;
  fds.reserve(wanted);  // before the first measurement, so the vector is not in the difference
  std::uint64_t writes = 0;
  std::uint64_t bytes = 0;
  std::uint64_t errors = 0;

  std::uint64_t rss_before = 0;
  std::uint64_t rss_open = 0;
  std::int64_t open_ns = 0;
  std::int64_t close_ns = 0;
  for (std::uint64_t round = 0; round < rounds; ++round) {
    rss_before = round == 0 ? resident_bytes() : rss_before;
    const std::int64_t opening = monotonic_ns();
    for (std::uint64_t i = 0; i < wanted; ++i) {
      const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
      const sockaddr_in& peer = peers[i % peers.size()];
      if (fd < 0 || connect(fd, reinterpret_cast<const sockaddr*>(&peer), sizeof peer) != 0) {
        die("connection " + std::to_string(i) + ": " + std::strerror(errno));
      }
      const auto id = static_cast<std::uint32_t>(round * wanted + i + 1);
      const FrameHeader header = make_header(id, 0, payload, kFlagEnd);
      std::memcpy(frame.data(), &header, kHeaderSize);
      fill_payload(payload_key(seed, id, 0), 0, std::span(frame.data() + kHeaderSize, payload));
      for (std::size_t sent = 0; sent < frame.size();) {
        const ssize_t n = write(fd, frame.data() + sent, frame.size() - sent);
        ++writes;
        if (n <= 0) {
          ++errors;
          break;
        }
        sent += static_cast<std::size_t>(n);
        bytes += static_cast<std::uint64_t>(n);
      }
      fds.push_back(fd);
    }
    const std::int64_t opened = monotonic_ns();
    sleep_ns(settle_ns);  // the shim's worker takes the connections in meanwhile
    rss_open = std::max(rss_open, resident_bytes());
    const std::int64_t closing = monotonic_ns();
    for (const int fd : fds) {
      close(fd);
    }
    close_ns += monotonic_ns() - closing;
    open_ns += opened - opening;
    fds.clear();
  }
  std::printf("%s\n", Json()
                          .field("pid", static_cast<std::int64_t>(getpid()))
                          .field("connections", wanted * rounds)
                          .field("at_once", wanted)
                          .field("writes", writes)
                          .field("bytes", bytes)
                          .field("write_errors", errors)
                          .field("rss_before", rss_before)
                          .field("rss_open", rss_open)
                          .field("open_seconds", static_cast<double>(open_ns) / 1e9)
                          .field("close_seconds", static_cast<double>(close_ns) / 1e9)
                          .field("fd_limit", limit)
                          .str()
                          .c_str());
  std::fflush(stdout);
  return errors == 0 ? 0 : 1;
}

}  // namespace tcptune::stress
