// The core behind the hooks: what happens to a socket's state and options at each call.
// Hooks (hooks.cpp) stay thin: they call these around the next symbol. Every function here
// preserves errno and tolerates fds the shim has never seen.
#pragma once

#include <sys/socket.h>
#include <sys/types.h>

#include <cerrno>
#include <cstdint>

#include "fd_table.hpp"
#include "monotonic_clock.hpp"
#include "socket_slot.hpp"
#include "telemetry_worker.hpp"
#include "write_clock.hpp"

namespace tcptune::shim {

void on_socket_created(int fd, int domain, int type, int protocol) noexcept;
void before_connect(int fd, const sockaddr* addr, socklen_t len) noexcept;
void after_connect(int fd, int result) noexcept;
void before_listen(int fd) noexcept;
void after_accept(int listen_fd, int fd) noexcept;

enum class SockoptVerdict {
  pass,            // call the real setsockopt
  swallow,         // return 0 without calling it: vetoed by "force", or held until the rule is known
  pass_then_push,  // call it, then push_held_tail(): the uncork ends the first message after a heartbeat
};
SockoptVerdict on_app_setsockopt(int fd, int level, int name, const void* value, socklen_t len) noexcept;
// Answers getsockopt for a held-back buffer value; false: call the real getsockopt.
bool answer_app_getsockopt(int fd, int level, int name, void* value, socklen_t* len) noexcept;

// Write path: the slot of a tracked TCP socket, nullptr for anything else. Lock-free, no
// allocation beyond a one-time chunk mmap, async-signal-safe; a never-seen fd is classified
// once (getsockopt) and is not tuned from here.
inline SocketSlot* tcp_slot_for_io(int fd) noexcept;
SocketSlot* classify_for_io(int fd) noexcept;
inline void before_write(SocketSlot& slot, int fd) noexcept;
// Before a measured call (slot has flag_measured): when it starts, and which connection the
// slot holds, so that a write racing a close on another thread is not counted on the next one.
struct WriteStart {
  std::int64_t ns = 0;
  std::uint32_t generation = 0;
  std::int16_t rule_index = kRuleDefaults;
};
inline WriteStart begin_measured_write(const SocketSlot& slot) noexcept;
// After that call, which offered `offered` bytes: its latency and outcome go into the slot's
// statistics (or, when the descriptor was closed meanwhile, into its rule's totals).
// Preserves errno.
inline void after_measured_write(int fd, SocketSlot& slot, const WriteStart& start, ssize_t result,
                                 std::size_t offered) noexcept;
// A write-family call on a kept-warm connection goes through its gate (keep_warm_gate.hpp).
// `offered(result)`: the bytes the call was given, asked after it. `more`: the call passed
// MSG_MORE, so the app's message continues in a later write. `short_is_whole`: the call moves
// what its source holds (splice from a pipe, sendfile to a file's end), so fewer bytes than
// asked is not a message written in part.
template <typename Offered, typename Call>
auto gated_write(int fd, SocketSlot& slot, Offered offered, bool more, bool short_is_whole, Call call)
    -> decltype(call());
// The first message after a heartbeat is complete on a socket with Nagle on: pushes its tail,
// which Linux would hold until the heartbeat's ACK (see keep_warm_gate.hpp), by setting
// TCP_NODELAY (which sends what is queued) and clearing it again, unless the app turned Nagle
// off meanwhile. Async-signal-safe; errno preserved.
void push_held_tail(int fd) noexcept;
// rtt = "auto" on a non-blocking connect: the first write finds the connection established.
void size_sndbuf_from_measured_rtt(SocketSlot& slot, int fd) noexcept;

// Read path: re-arms TCP_QUICKACK where the rule asks for it.
void after_read(SocketSlot& slot, int fd, ssize_t result) noexcept;

// False when fd is the shim's own log: the close must not happen (and reports success).
bool before_close(int fd) noexcept;
void before_close_range(unsigned int first, unsigned int last, int flags) noexcept;
// The shim's own descriptor inside [first, last], or -1: close_range must go around it.
int shim_fd_in_range(unsigned int first, unsigned int last) noexcept;
// dup2/dup3 of `from` onto `target`: the shim's own descriptor moves out of the way first, and
// the connection `target` names ends, unless the call will fail or close nothing (`from` is
// `target`, or not open).
void before_dup_onto(int from, int target) noexcept;
void after_dup(int from, int to) noexcept;
// Descriptors passed with SCM_RIGHTS in a message the kernel accepted (sent) or filled in
// (received): another process now shares those sockets, so they are not kept warm here.
void after_rights_sent(const msghdr& message) noexcept;
void after_rights_received(const msghdr& message) noexcept;
// fdopen(): the app writes through stdio from now on, past the hooks and the keep-warm gate.
void after_fdopen(int fd) noexcept;

// Sockets inherited across exec: adopted (classified and tuned) at start-up.
void adopt_inherited_sockets() noexcept;

inline SocketSlot* tcp_slot_for_io(int fd) noexcept {
  SocketSlot* slot = fd_table().find(fd);
  if (slot != nullptr) [[likely]] {
    const FdKind kind = slot->kind.load(std::memory_order_acquire);
    if (kind == FdKind::tcp) {
      return slot;
    }
    if (kind == FdKind::other) {
      return nullptr;
    }
  }
  return classify_for_io(fd);
}

inline void before_write(SocketSlot& slot, int fd) noexcept {
  if (slot.has_flag(flag_rtt_auto_pending)) [[unlikely]] {
    size_sndbuf_from_measured_rtt(slot, fd);
  }
}

inline WriteStart begin_measured_write(const SocketSlot& slot) noexcept {
  return {write_clock_ns(), slot.generation.load(std::memory_order_acquire),
          slot.rule_index.load(std::memory_order_relaxed)};
}

inline void after_measured_write(int fd, SocketSlot& slot, const WriteStart& start, ssize_t result,
                                 std::size_t offered) noexcept {
  const int error = errno;
  if (slot.generation.load(std::memory_order_acquire) != start.generation) [[unlikely]] {
    count_write_after_close(start.rule_index, result, offered, error);
    errno = error;
    return;
  }
  const std::int64_t end_ns = write_clock_ns();
  // Never negative, even across a recalibration of the write clock.
  const std::int64_t duration_ns = end_ns > start.ns ? end_ns - start.ns : 0;
  slot.stats.record_write(static_cast<std::uint64_t>(duration_ns), end_ns, result, offered, error);
  if (result > 0) {
    maybe_sample_ack(fd, slot, slot.stats.counters.bytes.load(std::memory_order_relaxed), end_ns);
  }
  const WriteReporting& reporting = write_reporting();
  const std::int64_t slow_ns = reporting.slow_write_ns.load(std::memory_order_relaxed);
  const bool slow = slow_ns != 0 && duration_ns >= slow_ns;
  if (slow || reporting.trace_writes.load(std::memory_order_relaxed)) [[unlikely]] {
    post_write(fd, slot, duration_ns, result, offered, slow);
  }
  errno = error;
}

template <typename Offered, typename Call>
auto gated_write(int fd, SocketSlot& slot, Offered offered, bool more, bool short_is_whole, Call call)
    -> decltype(call()) {
  slot.keep_warm_gate.enter_write();
  const auto result = call();
  const bool accepted_all =
      result >= 0 &&
      (short_is_whole || static_cast<std::size_t>(result) >= offered(static_cast<ssize_t>(result))) && !more;
  if (slot.keep_warm_gate.leave_write(accepted_all, result > 0 && !accepted_all, result > 0)) [[unlikely]] {
    push_held_tail(fd);
  }
  return result;
}

}  // namespace tcptune::shim
