#include "follow_up.hpp"

#include <sys/stat.h>

namespace tcptune::supervisor {

void read_socket(int socket, FollowUp& follow_up, bool effective_values) {
  struct stat socket_stat {};
  follow_up.inode = fstat(socket, &socket_stat) == 0 ? socket_stat.st_ino : 0;
  if (follow_up.call != FollowUp::Call::setsockopt && effective_values) {
    shim::read_effective(socket, follow_up.outcome.report);
  }
}

}  // namespace tcptune::supervisor
