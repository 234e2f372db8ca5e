#include "held_signals.hpp"

#include <pthread.h>

#include <cerrno>
#include <ctime>

namespace tcptune::telemetry {

namespace {

sigset_t held_set() noexcept {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGPIPE);
  sigaddset(&set, SIGXFSZ);
  sigaddset(&set, SIGTTOU);
  return set;
}

}  // namespace

HeldSignals::HeldSignals() noexcept {
  const int saved = errno;
  const sigset_t held = held_set();
  sigemptyset(&pending_before_);
  blocked_ = pthread_sigmask(SIG_BLOCK, &held, &previous_) == 0;
  if (blocked_) {
    (void)sigpending(&pending_before_);
  }
  errno = saved;
}

HeldSignals::~HeldSignals() {
  if (blocked_) {
    const int saved = errno;
    (void)pthread_sigmask(SIG_SETMASK, &previous_, nullptr);
    errno = saved;
  }
}

void HeldSignals::take_back(int error) noexcept {
  const int signal_number = error == EPIPE ? SIGPIPE : error == EFBIG ? SIGXFSZ : 0;
  if (!blocked_ || signal_number == 0 || sigismember(&pending_before_, signal_number) == 1) {
    return;
  }
  const int saved = errno;
  sigset_t pending;
  if (sigpending(&pending) == 0 && sigismember(&pending, signal_number) == 1) {
    sigset_t one;
    sigemptyset(&one);
    sigaddset(&one, signal_number);
    const timespec now{};
    (void)sigtimedwait(&one, nullptr, &now);  // this thread's own comes first: the one just raised
  }
  errno = saved;
}

}  // namespace tcptune::telemetry
