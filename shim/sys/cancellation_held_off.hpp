// Holds off pthread_cancel for a scope in which the shim waits inside one of the app's calls
// (for room in the worker's ring, for an exit's last records). The wait's nanosleep is a
// cancellation point, and unwinding from it through the shim's noexcept frames ends the process
// (std::terminate). Held off, a cancellation acts at the app's next cancellation point: most
// often the call it made, which the shim makes next.
#pragma once

#include <pthread.h>

namespace tcptune::shim {

class CancellationHeldOff {
 public:
  CancellationHeldOff() noexcept { (void)pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &previous_); }
  ~CancellationHeldOff() { (void)pthread_setcancelstate(previous_, nullptr); }
  CancellationHeldOff(const CancellationHeldOff&) = delete;
  CancellationHeldOff& operator=(const CancellationHeldOff&) = delete;

 private:
  int previous_ = PTHREAD_CANCEL_ENABLE;
};

}  // namespace tcptune::shim
