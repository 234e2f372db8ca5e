// An app that assembles one message under TCP_CORK with a pause inside it, for the keep-warm
// test: a burst that opens the congestion window, then TCP_CORK=1 (after connect, before
// connect, or not at all), "<HEAD>", a pause longer than the heartbeat interval, "<BODY>",
// TCP_CORK=0. A heartbeat between the two writes would land inside the corked message.
#include <string>
#include <vector>

#include "robust_util.hpp"

int main(int argc, char** argv) {
  const robust::Args args = robust::parse_args(argc, argv, 1);
  const int port = static_cast<int>(robust::arg_long(args, "port", 0));
  const std::string cork = robust::arg_str(args, "cork", "after");  // after | before | none
  const int pause_ms = static_cast<int>(robust::arg_long(args, "pause-ms", 600));
  const long burst_blocks = robust::arg_long(args, "burst-blocks", 160);

  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  // Loopback's 64 KiB segments would leave the window at 10 segments; Ethernet-sized ones let
  // the burst open it, and only a window above 10 segments is kept warm.
  robust::set_int(fd, IPPROTO_TCP, TCP_MAXSEG, 1400);
  if (cork == "before" && robust::set_int(fd, IPPROTO_TCP, TCP_CORK, 1) != 0) {
    robust::die("TCP_CORK=1 before connect");
  }
  if (robust::connect_loopback(fd, port) != 0) {
    robust::die("connect");
  }
  const std::vector<char> block(32 * 1024, 'x');
  for (long i = 0; i < burst_blocks; ++i) {
    if (!robust::write_all(fd, block.data(), block.size())) {
      robust::die("burst");
    }
  }
  // A corked tail goes out after the kernel's 200 ms cork limit.
  if (!robust::wait_until_acknowledged(fd, 5000)) {
    robust::die("burst not acknowledged");
  }
  std::printf("cwnd before the message: %u\n", robust::congestion_window(fd));
  if (cork == "after" && robust::set_int(fd, IPPROTO_TCP, TCP_CORK, 1) != 0) {
    robust::die("TCP_CORK=1");
  }
  const char head[] = "<HEAD>";
  const char body[] = "<BODY>";
  if (write(fd, head, sizeof head - 1) != static_cast<ssize_t>(sizeof head - 1)) {
    robust::die("write head");
  }
  robust::sleep_ms(pause_ms);
  if (write(fd, body, sizeof body - 1) != static_cast<ssize_t>(sizeof body - 1)) {
    robust::die("write body");
  }
  if (cork != "none" && robust::set_int(fd, IPPROTO_TCP, TCP_CORK, 0) != 0) {
    robust::die("TCP_CORK=0");
  }
  robust::wait_until_acknowledged(fd, 5000);
  close(fd);
  std::printf("done\n");
  return 0;
}
