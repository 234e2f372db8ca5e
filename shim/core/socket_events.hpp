// The core behind the hooks: what happens to a socket's state and options at each call.
// Hooks (hooks.cpp) stay thin: they call these around the next symbol, the write and read
// hooks one of the tracked_* paths at the end of this file. Every function here
// preserves errno and tolerates fds the shim has never seen.
#pragma once

#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <optional>

#include "app_memory.hpp"
#include "errno_saver.hpp"
#include "fd_table.hpp"
#include "idle_restart.hpp"
#include "monotonic_clock.hpp"
#include "shim_log.hpp"
#include "socket_slot.hpp"
#include "telemetry_worker.hpp"
#include "wait_push.hpp"
#include "write_clock.hpp"
#include "written_bytes.hpp"

namespace tcptune::shim {

void on_socket_created(int fd, int domain, int type, int protocol) noexcept;
void before_connect(int fd, const sockaddr* addr, socklen_t len) noexcept;
void after_connect(int fd, int result) noexcept;
// After a send that connected (MSG_FASTOPEN): connect() was never called, so the worker is told
// to look at the connect, whatever the send returned (its SYN may still be under way).
void after_fastopen_send(int fd) noexcept;
void before_listen(int fd) noexcept;
// Where accept() puts the peer's address: the app's buffer, or, when it passes none, the
// shim's own (the kernel fills it in the same call, so the peer costs no getpeername).
struct AcceptPeer {
  sockaddr* app_address = nullptr;
  socklen_t* app_length = nullptr;
  sockaddr_storage own{};
  socklen_t own_length = sizeof own;
  sockaddr* address() noexcept { return app_address != nullptr ? app_address : reinterpret_cast<sockaddr*>(&own); }
  socklen_t* length() noexcept { return app_address != nullptr ? app_length : &own_length; }
};
void after_accept(int listen_fd, int fd, const AcceptPeer& accepted) noexcept;

enum class SockoptVerdict {
  pass,            // call the real setsockopt
  swallow,         // return 0 without calling it: vetoed by "force", or held until the rule is known
  pass_then_push,  // call it, then push_held_tail(): the uncork ends the first message after a heartbeat
};
SockoptVerdict on_app_setsockopt(int fd, int level, int name, const void* value, socklen_t len) noexcept;
// Answers getsockopt for a held-back buffer value; false: call the real getsockopt.
bool answer_app_getsockopt(int fd, int level, int name, void* value, socklen_t* len) noexcept;
// After the real getsockopt: SO_ERROR tells how a non-blocking connect ended (the conn_open
// waiting for it is written).
void after_app_getsockopt(int fd, int level, int name, const void* value, const socklen_t* len, int result) noexcept;

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
// `offered(result)`: the bytes the call was given, asked after it. `bytes`: where they are
// (written_bytes.hpp), for a framer that follows the protocol. `more`: the call passed
// MSG_MORE, so the app's message continues in a later write.
template <typename Offered, typename Bytes, typename Call>
auto gated_write(int fd, SocketSlot& slot, Offered offered, const Bytes& bytes, bool more, Call call)
    -> decltype(call());
// The framer lost the connection's framing: keep-warm ends there (the gate stays inside a
// message, so no heartbeat starts before the worker drops the connection).
void end_keep_warm_framing_lost(SocketSlot& slot) noexcept;
// The first message after a heartbeat is complete on a socket with Nagle on: pushes its tail,
// which Linux would hold until the heartbeat's ACK (see keep_warm_gate.hpp), by setting
// TCP_NODELAY (which sends what is queued) and clearing it again, unless the app turned Nagle
// off meanwhile. Async-signal-safe; errno preserved.
void push_held_tail(int fd) noexcept;
// rtt = "auto" on a non-blocking connect: the first write finds the connection established.
void size_sndbuf_from_measured_rtt(SocketSlot& slot, int fd) noexcept;

// Read path: re-arms TCP_QUICKACK where the rule asks for it.
void after_read(SocketSlot& slot, int fd, ssize_t result) noexcept;

// False when fd is the shim's own log: the close must not happen (and reports success). Closing
// fd 2 ends a log on stderr (shim_log.hpp, app_releases_stderr), as does a range holding it.
bool before_close(int fd) noexcept;
void before_close_range(unsigned int first, unsigned int last, int flags) noexcept;
// The shim's own descriptors inside [first, last], in ascending order: close_range must go
// around them. Returns how many.
int shim_fds_in_range(unsigned int first, unsigned int last, int (&fds)[kMaxLogFds]) noexcept;
// dup2/dup3 of `from` onto `target`: the shim's own descriptor moves out of the way first, and
// the connection `target` names ends, unless the call will fail or close nothing (`from` is
// `target`, or not open).
void before_dup_onto(int from, int target) noexcept;
void after_dup(int from, int to) noexcept;
// Descriptors passed with SCM_RIGHTS in a message the kernel accepted (sent) or filled in
// (received): another process now shares those sockets, so they are not kept warm here.
void after_rights_sent(const msghdr& message) noexcept;
void after_rights_received(const msghdr& message) noexcept;
// A write libc makes past the hooks (dprintf's, aio_write's): a kept-warm socket's bytes can no
// longer be followed, so keep-warm ends on it, before the write.
void before_unfollowed_write(int fd) noexcept;
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
  // errno matters only to a failed call, and nothing below changes it but the rare records
  // (post_write keeps it): a call that succeeded neither reads nor writes it.
  const int error = result < 0 ? errno : 0;
  if (slot.generation.load(std::memory_order_acquire) != start.generation) [[unlikely]] {
    count_write_after_close(start.rule_index, result, offered, error);
    return;
  }
  const std::int64_t end_ns = write_clock_ns();
  // Never negative, even across a recalibration of the write clock.
  const std::int64_t duration_ns = end_ns > start.ns ? end_ns - start.ns : 0;
  slot.stats.record_write(static_cast<std::uint64_t>(duration_ns), end_ns, result, offered, error);
  if (result > 0 && !slot.stats.ack_sample_outstanding.load(std::memory_order_relaxed)) [[unlikely]] {
    maybe_sample_ack(fd, slot, slot.stats.counters.bytes.load(std::memory_order_relaxed), end_ns);
  }
  const WriteReporting& reporting = g_write_reporting;
  const std::int64_t slow_ns = reporting.slow_write_ns.load(std::memory_order_relaxed);
  const bool slow = slow_ns != 0 && duration_ns >= slow_ns;
  if (slow || reporting.trace_writes.load(std::memory_order_relaxed)) [[unlikely]] {
    const ErrnoSaver saver;
    post_write(fd, slot, duration_ns, result, offered, slow);
  }
}

// The connection's message boundary after a call that returned `result`, on a connection whose
// framing follows its protocol: only what the kernel accepted advances it.
template <typename Bytes>
bool framed_boundary(SocketSlot& slot, const Bytes& bytes, bool alone, ssize_t result) noexcept {
  MessageFramer& framer = slot.framer;
  if (!alone) {
    framer.lose(FramingLoss::concurrent_writes);
  } else if (result > 0) {
    const ErrnoSaver saver;
    feed_framer(framer, bytes, static_cast<std::size_t>(result));
  }
  if (framer.loss() != FramingLoss::none) [[unlikely]] {
    end_keep_warm_framing_lost(slot);
    return false;
  }
  return framer.at_boundary();
}

// Raw heartbeat bytes: a call that took all it was offered, without MSG_MORE, is taken to end
// a message. A sendfile or splice that moved less ends it only where its source ran dry; a
// full non-blocking socket, a send timeout or a signal may have cut it short, with the message
// going on in a later call.
template <typename Bytes>
bool guessed_whole(const Bytes& bytes, ssize_t result, std::size_t offered, bool more) noexcept {
  if (result < 0 || more) {
    return false;
  }
  if (static_cast<std::size_t>(result) >= offered) {
    return true;
  }
  if constexpr (Bytes::kSourceMayRunDry) {
    return result == 0 || source_ran_dry(bytes);
  }
  return false;
}

template <typename Offered, typename Bytes, typename Call>
auto gated_write(int fd, SocketSlot& slot, Offered offered, const Bytes& bytes, bool more, Call call)
    -> decltype(call()) {
  const bool alone = slot.keep_warm_gate.enter_write();
  const auto result = call();
  const auto accepted = static_cast<ssize_t>(result);
  bool whole = false;
  bool part = false;
  if (slot.framer.follows_protocol()) {
    whole = framed_boundary(slot, bytes, alone, accepted);
    part = !whole;
  } else {
    whole = guessed_whole(bytes, accepted, offered(accepted), more);
    part = accepted > 0 && !whole;
  }
  if (slot.keep_warm_gate.leave_write(whole, part, accepted > 0)) [[unlikely]] {
    push_held_tail(fd);
  }
  return result;
}

// The write and read families' path through the core: each hook is one call of these, around
// its next definition (`call`, which returns what the hook returns). `offered(result)` is
// the bytes the call was given, asked only for a measured or kept-warm socket, after the call
// (see iov_bytes_after); `flags` are the send flags (MSG_MORE says the app's message goes on in
// a later call); `short_is_whole` as for gated_write.

// Timing and counting around one write-family call on a tracked TCP socket.
template <typename Offered, typename Call>
auto measured_write(int fd, SocketSlot& slot, Offered offered, Call call) -> decltype(call()) {
  if (!slot.has_flag(flag_measured)) {
    return call();
  }
  const WriteStart start = begin_measured_write(slot);
  const IdleCheck idle =
      slot.has_flag(flag_idle_restart_possible) ? check_idle_before_write(fd, slot, start.ns) : IdleCheck{};
  const auto result = call();
  const auto written = static_cast<ssize_t>(result);
  const std::size_t bytes = offered(written);
  after_measured_write(fd, slot, start, written, bytes);
  if (idle.armed) [[unlikely]] {
    report_idle_restart(fd, slot, idle, written, bytes);
  }
  return result;
}

// A write-family call on a tracked TCP socket.
template <typename Offered, typename Bytes, typename Call>
auto tcp_write(int fd, SocketSlot& slot, Offered offered, const Bytes& bytes, Call call, int flags)
    -> decltype(call()) {
  before_write(slot, fd);
  const auto result = slot.has_flag(flag_keep_warm)
                          ? gated_write(fd, slot, offered, bytes, (flags & MSG_MORE) != 0,
                                        [&] { return measured_write(fd, slot, offered, call); })
                          : measured_write(fd, slot, offered, call);
  if (result > 0 && slot.has_flag(flag_push_on_wait)) {
    note_written(fd, slot, flags);
  }
  return result;
}

// A write-family call on any descriptor: write, send, writev, sendfile, splice.
template <typename Offered, typename Bytes, typename Call>
auto tracked_write(int fd, Offered offered, const Bytes& bytes, Call call, int flags = 0) -> decltype(call()) {
  SocketSlot* slot = tcp_slot_for_io(fd);
  if (slot == nullptr) [[likely]] {
    return call();
  }
  return tcp_write(fd, *slot, offered, bytes, call, flags);
}

inline std::size_t iov_bytes(const iovec* iov, std::size_t count) noexcept {
  std::size_t total = 0;
  for (std::size_t i = 0; iov != nullptr && i < count; ++i) {
    total += iov[i].iov_len;
  }
  return total;
}

// The bytes an iovec-based call was offered, read only once the kernel has accepted the call:
// it has then read these iovecs itself, so they are the app's valid memory. A failed call may
// have been given bad pointers, which the kernel answered with EFAULT: they are not touched.
inline std::size_t iov_bytes_after(ssize_t result, const iovec* iov, std::size_t count) noexcept {
  return result >= 0 ? iov_bytes(iov, count) : 0;
}

// sendto: with MSG_FASTOPEN and an address, the call also connects (it sends the SYN).
template <typename Call>
ssize_t tracked_sendto(int fd, const void* buf, std::size_t count, int flags, const sockaddr* addr, socklen_t len,
                       Call call) {
  const bool connects = (flags & MSG_FASTOPEN) != 0 && addr != nullptr;
  if (connects) {
    before_connect(fd, addr, len);
  }
  const ssize_t result = tracked_write(
      fd, [&](ssize_t) { return count; }, BufferBytes{buf}, call, flags);
  if (connects) {
    after_fastopen_send(fd);
  }
  return result;
}

// sendmsg: it may connect (MSG_FASTOPEN) and pass descriptors (SCM_RIGHTS) as well.
template <typename Call>
ssize_t tracked_sendmsg(int fd, const msghdr* message, int flags, Call call) {
  bool connects = false;
  if ((flags & MSG_FASTOPEN) != 0) {
    // Before the call, so the app's header is read without trusting it.
    if (const std::optional<msghdr> header = read_app_object<msghdr>(message);
        header.has_value() && header->msg_name != nullptr) {
      before_connect(fd, static_cast<const sockaddr*>(header->msg_name), header->msg_namelen);
      connects = true;
    }
  }
  const auto offered = [&](ssize_t result) {
    return result >= 0 ? iov_bytes(message->msg_iov, message->msg_iovlen) : std::size_t{0};
  };
  const ssize_t result = tracked_write(fd, offered, MessageBytes{message}, call, flags);
  if (connects) {
    after_fastopen_send(fd);
  }
  if (result >= 0 && message->msg_controllen != 0) {  // accepted: the kernel read `message`
    const ErrnoSaver saver;
    after_rights_sent(*message);
  }
  return result;
}

// sendmmsg: `call` returns the number of messages sent. Measured and gated as one write of all
// its messages, its result counted in bytes, offered counted over the messages the kernel took
// (and so read): a later one may be bad memory.
template <typename Call>
int tracked_sendmmsg(int fd, const mmsghdr* messages, int flags, Call call) {
  SocketSlot* slot = tcp_slot_for_io(fd);
  if (slot == nullptr) [[likely]] {
    return call();
  }
  if (!slot->has_flag(flag_measured) && !slot->has_flag(flag_keep_warm) && !slot->has_flag(flag_push_on_wait)) {
    before_write(*slot, fd);
    return call();
  }
  int sent = 0;
  const auto offered = [&](ssize_t /*bytes*/) {
    std::size_t total = 0;
    for (int i = 0; i < sent; ++i) {
      total += iov_bytes(messages[i].msg_hdr.msg_iov, messages[i].msg_hdr.msg_iovlen);
    }
    return total;
  };
  tcp_write(
      fd, *slot, offered, MultiMessageBytes{messages, &sent},
      [&]() -> ssize_t {
        sent = call();
        std::size_t bytes = 0;
        for (int i = 0; messages != nullptr && i < sent; ++i) {
          bytes += messages[i].msg_len;
        }
        return sent < 0 ? -1 : static_cast<ssize_t>(bytes);
      },
      flags);
  return sent;
}

// A read-family call: read, recv, recvfrom, readv. A wait for input (even one that returns
// EAGAIN at once): what this thread's writes left held back by Nagle goes out first.
template <typename Call>
ssize_t tracked_read(int fd, Call call) {
  // Only a read of a TCP socket counts as a wait here (poll, epoll and select count for any
  // descriptor): a file's read never waits, and a program streaming a file to a socket in
  // small reads and writes keeps Nagle's coalescing.
  SocketSlot* slot = fd_table().find(fd);  // slots are never freed: still valid after the call
  if (slot != nullptr && slot->is_tcp()) {
    push_before_wait();
  }
  const ssize_t result = call();
  if (slot != nullptr && slot->is_tcp()) {
    after_read(*slot, fd, result);
  }
  return result;
}

// recvmsg: it may receive descriptors (SCM_RIGHTS) as well.
template <typename Call>
ssize_t tracked_recvmsg(int fd, const msghdr* message, Call call) {
  const ssize_t result = tracked_read(fd, call);
  if (result >= 0 && message->msg_controllen != 0) {  // filled in by the kernel
    const ErrnoSaver saver;
    after_rights_received(*message);
  }
  return result;
}

}  // namespace tcptune::shim
