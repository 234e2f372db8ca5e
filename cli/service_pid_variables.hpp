// systemd names the process it started in LISTEN_PID (socket activation, sd_listen_fds(3)) and
// WATCHDOG_PID (sd_watchdog_enabled(3)); the program checks them against its own pid and ignores
// the descriptors or the watchdog when they differ. When tcptune run is that process and runs the
// program as its child (supervised mode, a systemd drop-in's wrapped ExecStart=), they are made to
// name the child, between fork and exec: the passed descriptors are the child's to take.
#pragma once

#include <array>
#include <cstddef>

namespace tcptune::cli {

class ServicePidVariables {
 public:
  // Before fork: which of the variables name this process now.
  void prepare();
  // In the child, between fork and exec: points them at the child's pid. Async-signal-safe (no
  // allocation: the entries were made room for in prepare()).
  void retarget_in_child() noexcept;

 private:
  static constexpr std::size_t kEntrySize = 40;  // "WATCHDOG_PID=" and a pid's digits
  struct Entry {
    std::array<char, kEntrySize> text{};
    std::size_t name_length = 0;  // "LISTEN_PID=" included
    std::size_t environ_index = 0;
  };
  std::array<Entry, 2> entries_{};
  std::size_t count_ = 0;
};

}  // namespace tcptune::cli
