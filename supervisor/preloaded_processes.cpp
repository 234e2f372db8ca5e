#include "preloaded_processes.hpp"

#include <sys/syscall.h>
#include <sys/uio.h>

#include <algorithm>
#include <cerrno>

#include "tcptune/config/core_announcement.hpp"
#include "trapped_call.hpp"

namespace tcptune::supervisor {

namespace {

enum class Marker { in_place, absent, not_readable };

// What is at `address` in `pid`'s memory: an active core's marker, something else (or nothing
// mapped), or memory this process may not read (the program is not dumpable).
Marker marker_at(pid_t pid, std::uint64_t address) noexcept {
  config::CoreMarker marker{};
  iovec local{&marker, sizeof marker};
  // An address in the program, never dereferenced here.
  // NOLINTNEXTLINE(performance-no-int-to-ptr)
  iovec remote{reinterpret_cast<void*>(static_cast<std::uintptr_t>(address)), sizeof marker};
  const ssize_t read = process_vm_readv(pid, &local, 1, &remote, 1, 0);
  if (read < 0 && errno == EPERM) {
    return Marker::not_readable;
  }
  return read == static_cast<ssize_t>(sizeof marker) && config::is_core_marker(marker, address) ? Marker::in_place
                                                                                                : Marker::absent;
}

}  // namespace

bool PreloadedProcesses::is_announcement(const seccomp_data& data) noexcept {
  return data.nr == SYS_connect && static_cast<int>(data.args[0]) == config::kAnnouncementFd &&
         data.args[2] == sizeof(config::CoreMarker);
}

void PreloadedProcesses::take_announcement(const TrappedCall& call, pid_t process) {
  const std::uint64_t address = call.data().args[1];
  // A process this one may not read (not dumpable) is taken at its word: the supervisor could
  // not tune its sockets anyway, and an exec that makes it readable again shows.
  if (marker_at(call.thread(), address) == Marker::absent || !call.still_pending()) {
    call.continue_call();
    return;
  }
  if (markers_.size() >= sweep_above_) {
    drop_ended();
  }
  markers_[process] = address;
  ++announced_;
  call.complete_call(0, 0);
}

bool PreloadedProcesses::core_tunes(const TrappedCall& call, pid_t process) {
  const auto found = markers_.find(process);
  if (found == markers_.end()) {
    return false;
  }
  if (marker_at(call.thread(), found->second) != Marker::absent) {
    return true;
  }
  // Read from another process only if this thread is gone and its id reused: then the call went
  // with it, and the process it belonged to stays known.
  if (call.still_pending()) {
    markers_.erase(found);  // an exec replaced the memory: supervised again
  }
  return false;
}

void PreloadedProcesses::drop_ended() {
  std::erase_if(markers_, [](const auto& entry) { return marker_at(entry.first, entry.second) == Marker::absent; });
  // Many live ones: the next look is after as many again, so a sweep costs each announcement O(1).
  sweep_above_ = std::max(kSweepAbove, markers_.size() * 2);
}

}  // namespace tcptune::supervisor
