// Waiting for a child with a deadline (tcptune ab --run-timeout): a run that outlives it is
// stopped, SIGTERM first so that it may write what it has, SIGKILL if it is still there later.
#pragma once

#include <sys/types.h>

namespace tcptune::cli {

struct DeadlineWait {
  int status = 0;          // the child's wait status
  bool timed_out = false;  // stopped at the deadline
};

// Waits for `child`; past `seconds` sends it SIGTERM, and SIGKILL `grace_seconds` after that.
DeadlineWait wait_with_deadline(pid_t child, double seconds, double grace_seconds = 5);

}  // namespace tcptune::cli
