// The signals a write of tcptune's own can raise at the writing thread: SIGPIPE (a pipe whose
// reader is gone), SIGXFSZ (a file past `ulimit -f`) and SIGTTOU (a terminal, from a background
// process group under `stty tostop`). Their default actions end or stop the process, and the
// dispositions are the app's, so they are blocked around the write instead; one the write itself
// raised is taken back before the mask is restored (one the app already had pending is left to it).
#pragma once

#include <signal.h>

namespace tcptune::telemetry {

class HeldSignals {
 public:
  HeldSignals() noexcept;
  ~HeldSignals();
  HeldSignals(const HeldSignals&) = delete;
  HeldSignals& operator=(const HeldSignals&) = delete;

  // After the write, with its errno: EPIPE raised SIGPIPE, EFBIG SIGXFSZ (a blocked SIGTTOU is
  // not raised: the write goes ahead).
  void take_back(int error) noexcept;

 private:
  sigset_t previous_{};
  sigset_t pending_before_{};
  bool blocked_ = false;
};

}  // namespace tcptune::telemetry
