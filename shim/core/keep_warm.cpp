#include "keep_warm.hpp"

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>

#include <atomic>
#include <string>

#include "fd_table.hpp"
#include "heartbeat_send.hpp"
#include "idle_restart.hpp"
#include "keep_warm_scheduler.hpp"
#include "next_symbols.hpp"
#include "socket_probe.hpp"
#include "tcptune/config/rule_matcher.hpp"
#include "telemetry_worker.hpp"

namespace tcptune::shim {

namespace {
std::atomic<bool> g_keep_warm_started{false};
}  // namespace

bool keep_warm_started() noexcept {
  return g_keep_warm_started.load(std::memory_order_relaxed);
}

std::optional<OptionReport> start_keep_warm(int fd, SocketSlot& slot, const config::Tuning& tuning, SocketRole role,
                                            ApplyPhase phase) {
  if (!tuning.keep_warm) {
    return std::nullopt;
  }
  OptionReport report{
      "keep_warm", config::describe_keep_warm(*tuning.keep_warm), "off", "", OptionStatus::left_alone, 0, {}};
  if (role == SocketRole::listener) {
    report.effective = "-";
    report.note = "applies to the accepted connections";
    return report;
  }
  // A preset's bytes are a no-op in one direction only (an HTTP server skips CRLF, a client does not).
  const config::Role side = role == SocketRole::client   ? config::Role::client
                            : role == SocketRole::server ? config::Role::server
                                                         : config::Role::any;
  if (std::optional<std::string> refusal = config::heartbeat_side_refusal(*tuning.keep_warm, side)) {
    report.note = std::move(*refusal);
    return report;
  }
  if (slot.has_flag(flag_stdio)) {
    report.note = "written through stdio (fdopen), which the shim cannot see; not kept warm";
    return report;
  }
  if (phase == ApplyPhase::inherited_connected) {
    // Shared by definition: the other owner's writes would not pass this process's gate.
    report.note = "inherited from another process, which may write to it too; not kept warm";
    return report;
  }
  const config::Framing framing = tuning.keep_warm->framing;
  const bool fresh = phase != ApplyPhase::adopted_connected;
  if (!fresh && framing != config::Framing::guessed && framing != config::Framing::lines) {
    report.note = "connected before the shim saw it: where its " + tuning.keep_warm->protocol +
                  " messages end is unknown; not kept warm";
    return report;
  }
  if (!namespace_restarts_after_idle()) {
    report.note = "not needed: net.ipv4.tcp_slow_start_after_idle is 0 in this network namespace";
    return report;
  }
  const std::string congestion = get_congestion(fd);
  if (congestion.rfind("bbr", 0) == 0) {
    report.note = "not needed: " + congestion + " does not restart the window after idle";
    return report;
  }
  HeartbeatTarget target;
  if (!take_heartbeat_target(fd, target)) {
    report.note = "its identity could not be taken (SO_TXTIME and fstat failed); not kept warm";
    return report;
  }
  ensure_telemetry_worker();
  // The rule's TCP_NODELAY (or the app's, or the listener's) is in the kernel by now; the
  // app's later changes reach the gate through the setsockopt hook.
  slot.keep_warm_gate.set_nagle(get_int_option(fd, IPPROTO_TCP, TCP_NODELAY).value_or(1) == 0);
  // An accepted socket inherits its listener's cork, which the hooks never saw on this fd.
  if (get_int_option(fd, IPPROTO_TCP, TCP_CORK).value_or(0) != 0) {
    slot.keep_warm_gate.set_corked(true);
  }
  slot.framer.start(framing, fresh);
  slot.keep_warm_gate.start_connection(!slot.framer.at_boundary());
  slot.set_flag(flag_keep_warm);
  g_keep_warm_started.store(true, std::memory_order_relaxed);
  const WarmConnection connection{fd, slot.generation.load(std::memory_order_acquire),
                                  slot.rule_index.load(std::memory_order_relaxed), target};
  if (!post_keep_warm(connection)) {
    slot.clear_flag(flag_keep_warm);
    report.note = "the worker thread is not running or its queue is full; not kept warm";
    return report;
  }
  report.effective = "on";
  report.status = OptionStatus::applied;
  report.note = framing == config::Framing::guessed
                    ? "message ends guessed: a write call that returns whole is taken to end one"
                    : "message ends followed: " + tuning.keep_warm->protocol + " framing over the bytes written";
  if (slot.keep_warm_gate.nagle()) {
    report.note += "; Nagle is on: the message after a heartbeat is pushed (TCP_NODELAY set and cleared)";
  }
  return report;
}

void stop_keep_warm(SocketSlot& slot) noexcept {
  slot.keep_warm_gate.stop_heartbeats();
  slot.clear_flag(flag_keep_warm);
}

void keep_warm_after_fork_in_parent() noexcept {
  // Every one: FD_CLOEXEC only matters at exec, a forked child that does not exec (a prefork
  // server, multiprocessing) writes through its copy, and a spawned child may get the socket
  // through a dup2 file action.
  fd_table().for_each_tcp([](int /*fd*/, SocketSlot& slot) {
    if (slot.has_flag(flag_keep_warm)) {
      stop_keep_warm(slot);
    }
  });
}

void keep_warm_before_exec_in_child() noexcept {
  fd_table().for_each_tcp([](int fd, SocketSlot& slot) {
    if (slot.has_flag(flag_keep_warm) && (next::fcntl(fd, F_GETFD, 0) & FD_CLOEXEC) == 0) {
      stop_keep_warm(slot);  // -1 (closed already) has FD_CLOEXEC's bit set: not inherited
    }
  });
}

void keep_warm_after_fork_in_child() noexcept {
  // Only slots that were kept warm are written: the others' pages stay shared with the parent.
  fd_table().for_each_slot([](int /*fd*/, SocketSlot& slot) {
    if (slot.has_flag(flag_keep_warm) || slot.keep_warm_gate.raw() != 0) {
      slot.keep_warm_gate.reset_in_child();
      slot.clear_flag(flag_keep_warm);
    }
  });
}

}  // namespace tcptune::shim
