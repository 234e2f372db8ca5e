// tcptune-linkem: a user-space link emulator between two network namespaces (tcptune-a at 198.18.0.1,
// tcptune-b at 198.18.0.2) joined by TUN devices, for kernels without the netem qdisc.
#include <cstdio>
#include <cstring>
#include <string_view>
#include <vector>

#include "commands.hpp"

namespace {

constexpr const char* kHelp = R"(usage:
  tcptune-linkem up [LINK OPTIONS]              create the namespaces and start the link; prints its JSON
  tcptune-linkem down                           stop the link and delete the namespaces (idempotent)
  tcptune-linkem status                         JSON of the running link with counters (exit 1: not running)
  tcptune-linkem run [LINK OPTIONS] -- CMD ...  up, run CMD in the host namespace, down; CMD's exit status
  tcptune-linkem set [--congestion NAME] [--slow-start-after-idle 0|1]
                                                change the namespaces' TCP sysctls on the running link

LINK OPTIONS (both directions; --ab-X / --ba-X override one direction, e.g. --ab-rate 10Mbit):
  --rtt DUR         one-way delay DUR/2 each way (e.g. 40ms)
  --delay DUR       one-way delay, each way (default 0)
  --rate RATE       serialization rate of IP packets: 100Mbit, 1Gbit, 12.5MB/s; 0 = unlimited (default)
  --queue N         drop-tail queue waiting for serialization, packets (default 1000)
  --loss PCT        random loss, percent (default 0)
  --jitter DUR      delay varies uniformly by +-DUR, without reordering (default 0)
  --seed N          seed of loss and jitter (default: fresh, reported in the JSON)
  --congestion NAME          net.ipv4.tcp_congestion_control in both namespaces (default cubic)
  --slow-start-after-idle 0|1  net.ipv4.tcp_slow_start_after_idle in both namespaces (default 1)
  --backend auto|tun|netem   auto and tun use TUN devices; netem fails unless implemented and available
DUR: ns, us, ms, s (90ms, 500us, 1.5s). Programs reach the other side with
  ip netns exec tcptune-a PROGRAM ... 198.18.0.2     (and tcptune-b at 198.18.0.1)
Exit status: 0 ok, 1 failure, 2 bad arguments, 77 not root or no /dev/net/tun.
)";

}  // namespace

int main(int argc, char** argv) {
  using namespace tcptune::linkem;
  if (argc < 2) {
    (void)std::fprintf(stderr, "tcptune-linkem: missing command: up, down, status, run or set (see --help)\n");
    return kExitUsage;
  }
  const std::string_view command = argv[1];
  if (command == "--help" || command == "-h" || command == "help") {
    (void)std::fputs(kHelp, stdout);
    return 0;
  }
  std::vector<std::string_view> args;
  char** command_argv = nullptr;
  for (int i = 2; i < argc; ++i) {
    if (command == "run" && std::strcmp(argv[i], "--") == 0) {
      command_argv = argv + i + 1;
      break;
    }
    args.emplace_back(argv[i]);
  }
  if (command == "up") {
    return command_up(args);
  }
  if (command == "down") {
    return command_down(args);
  }
  if (command == "status") {
    return command_status(args);
  }
  if (command == "set") {
    return command_set(args);
  }
  if (command == "run") {
    return command_run(args, command_argv);
  }
  (void)std::fprintf(stderr, "tcptune-linkem: unknown command \"%s\": up, down, status, run or set (see --help)\n",
                     argv[1]);
  return kExitUsage;
}
