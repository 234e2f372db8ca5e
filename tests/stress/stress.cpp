// tcptune_stress: a workload that does what real programs do to their sockets, all at once,
// and a receiver that checks every byte of it. Run without the shim it is the control; under
// the shim nothing it sees may change.
//   tcptune_stress receive [--seed S] [--signals]        prints "ports WARM PLAIN", then one JSON line
//   tcptune_stress send --warm-port P --plain-port Q ...  the mixed workload (sender.cpp), one JSON line
//   tcptune_stress scale --port P --connections N ...     many connections at once (scale.cpp)
#include <cstdio>
#include <string_view>

#include "modes.hpp"

int main(int argc, char** argv) {
  using tcptune::stress::Args;
  const std::string_view mode = argc > 1 ? argv[1] : "";
  if (mode == "receive") {
    return tcptune::stress::run_receiver(
        Args(argc, argv, 2,
             {"--seed", "--address", "--signals", "--finish-timeout-ms", "--max-connections", "--listen-fds"}));
  }
  if (mode == "send") {
    return tcptune::stress::run_sender(
        Args(argc, argv, 2,
             {"--address", "--warm-port", "--plain-port", "--seed", "--threads", "--connections", "--duration-ms",
              "--interval-ms", "--plain-percent", "--racing-percent", "--exec-linger-ms", "--signals", "--forks",
              "--close-races"}));
  }
  if (mode == "scale") {
    return tcptune::stress::run_scale(
        Args(argc, argv, 2,
             {"--port", "--port2", "--address", "--connections", "--payload", "--seed", "--settle-ms", "--rounds"}));
  }
  std::fprintf(stderr, "usage: tcptune_stress receive|send|scale [options] (see tests/stress/stress.cpp)\n");
  return 2;
}
