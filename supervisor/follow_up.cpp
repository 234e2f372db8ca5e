#include "follow_up.hpp"

#include <sys/stat.h>

#include "socket_probe.hpp"

namespace tcptune::supervisor {

void read_socket(FollowUp& follow_up, bool effective_values) {
  if (follow_up.socket.get() < 0) {
    return;
  }
  struct stat socket_stat {};
  follow_up.inode = fstat(follow_up.socket.get(), &socket_stat) == 0 ? socket_stat.st_ino : 0;
  if (follow_up.call != FollowUp::Call::setsockopt && effective_values) {
    shim::read_effective(follow_up.socket.get(), follow_up.outcome.report);
    // A client's local endpoint as the call left it (bound by connect).
    if (follow_up.call == FollowUp::Call::connect) {
      follow_up.local = shim::local_endpoint(follow_up.socket.get());
    }
  }
  follow_up.socket = OwnedFd();
}

}  // namespace tcptune::supervisor
