#include "pending_open.hpp"

#include <netinet/tcp.h>

#include <cerrno>
#include <memory>
#include <string>

#include "connection_names.hpp"
#include "connection_record.hpp"
#include "errno_saver.hpp"
#include "fd_table.hpp"
#include "idle_restart.hpp"
#include "interned_reports.hpp"
#include "process_runtime.hpp"
#include "shim_log.hpp"
#include "snapshot_pool.hpp"
#include "socket_probe.hpp"
#include "socket_slot.hpp"
#include "tcp_info_reader.hpp"
#include "telemetry_worker.hpp"

namespace tcptune::shim {

namespace {

bool has_address(const config::Endpoint& endpoint) {
  return endpoint.family != 0 && endpoint.port != 0;
}

// A connection's end: an address and a port (a socket that never connected has neither, or a
// port on the unspecified address).
bool names_an_end(const config::Endpoint& endpoint) {
  return has_address(endpoint) && !config::is_unspecified(endpoint);
}

// A client's conn_open waits in the slot for its connect, and may be done with on the worker's
// thread: from the heap, each new one would come from the allocator's shared arena (its
// per-thread cache holds what the worker freed), a slow path on every logged connection. Taken
// from this fixed reserve instead. A fork child keeps the parent's reserve as it was: what was
// in flight there is not reused. Never destroyed: the app's threads may still take and give
// back entries while the process exits.
constexpr std::uint32_t kReservedOpens = 512;
union ReservedOpens {
  telemetry::SnapshotPool<PendingOpen, kReservedOpens> pool;
  constexpr ReservedOpens() : pool() {}
  ReservedOpens(const ReservedOpens&) = delete;
  ReservedOpens& operator=(const ReservedOpens&) = delete;
  ~ReservedOpens() {}  // NOLINT(modernize-use-equals-default): = default would destroy the pool
};
constinit ReservedOpens g_reserved_opens;

// A completed connect's conn_open goes to the worker, which formats and writes it with the
// other records (and, should the process _exit, the exiting thread: telemetry_worker.hpp) and
// finds out whether the connection may restart after idle; both done by this thread when the
// worker cannot take it. While exit() writes the last records it goes back in the slot, where
// the exit finds it in its place among them: written here, it could go ahead of its
// descriptor's earlier records that the exit is still writing.
void hand_over_or_write(SocketSlot& slot, PendingOpen* open, const config::Policy& policy,
                        const config::Endpoint& local, const config::Endpoint& peer, int connect_error) noexcept {
  if (post_completed_connect(*open, local, peer, connect_error)) {
    open->owns_report = false;  // its report went with the copy handed over
    free_pending_open(open);
    return;
  }
  if (connect_error == 0 && exit_writing_records() && park_pending_open(slot, open)) {
    return;
  }
  const int fd = open->fd;
  const std::uint32_t generation = open->generation;
  write_pending_open(open, policy, local, peer, connect_error);
  if (connect_error == 0) {
    note_idle_restart_possible(fd, generation);
  }
}

}  // namespace

telemetry::Record conn_open_record(int fd, SocketRole role, const config::Policy& policy, int rule, ApplyPhase phase,
                                   const config::Endpoint& local, const config::Endpoint& peer, const CallSite& site,
                                   const ApplyReport& report, int connect_error) {
  telemetry::Record record =
      connection_record("conn_open", fd, role, policy, rule, phase, has_address(local) ? local : config::Endpoint{},
                        has_address(peer) ? peer : config::Endpoint{});
  if (connect_error != 0) {
    record.add("connect_error", connect_error_name(connect_error));
  }
  if (site.depth > 0) {
    record.add_json("callsite", callsite_json(site), callsite_text(site));
  }
  add_options(record, report);
  return record;
}

const ApplyReport& PendingOpen::options() const noexcept {
  static const ApplyReport none;
  return report != nullptr ? *report : none;
}

void keep_report(PendingOpen& open, ApplyReport&& report) {
  release_report(open);
  open.report = intern_report(report);
  open.owns_report = open.report == nullptr;
  if (open.owns_report) {
    open.report = new ApplyReport(std::move(report));
  }
}

void release_report(const PendingOpen& open) noexcept {
  if (open.owns_report) {
    delete open.report;
  }
}

PendingOpen* new_pending_open(const PendingOpen& contents) {
  if (PendingOpen* open = g_reserved_opens.pool.acquire()) {
    *open = contents;
    return open;
  }
  return new PendingOpen(contents);
}

void free_pending_open(PendingOpen* open) noexcept {
  release_report(*open);
  if (g_reserved_opens.pool.holds(open)) {
    g_reserved_opens.pool.release(open);
  } else {
    delete open;
  }
}

bool park_pending_open(SocketSlot& slot, PendingOpen* open) noexcept {
  ConnectionNames* names = names_for(slot);
  if (names == nullptr) {
    return false;
  }
  // One left by a connection closed behind the hooks (a raw close) is written now, as it stands.
  if (PendingOpen* stale = names->pending.exchange(open, std::memory_order_acq_rel); stale != nullptr) {
    if (const Runtime* runtime = active_runtime(); runtime != nullptr) {
      write_pending_open(stale, *runtime->policy, {}, {});
    } else {
      free_pending_open(stale);
    }
  }
  return true;
}

PendingOpen* take_pending_open(SocketSlot& slot, std::uint32_t generation) noexcept {
  ConnectionNames* names = names_if_any(slot);
  if (names == nullptr) {
    return nullptr;
  }
  // Owned before it is looked at: another thread may be taking (and deleting) it meanwhile.
  PendingOpen* open = names->pending.exchange(nullptr, std::memory_order_acq_rel);
  if (open == nullptr || open->generation == generation) {
    return open;
  }
  // Another connection's (left by one closed behind the hooks): put back for whoever writes it.
  // Should a new one have been parked meanwhile, this one is left unwritten, and unfreed: this
  // may run in a signal handler.
  PendingOpen* none = nullptr;
  (void)names->pending.compare_exchange_strong(none, open, std::memory_order_acq_rel);
  return nullptr;
}

void write_conn_open(const PendingOpen& open, const config::Policy& policy, const config::Endpoint& local,
                     const config::Endpoint& peer, int connect_error) noexcept {
  try {
    log_record(config::LogLevel::info, conn_open_record(open.fd, open.role, policy, open.rule, open.phase,
                                                        names_an_end(local) ? local : config::Endpoint{},
                                                        names_an_end(peer) ? peer : open.connect_peer, open.site,
                                                        open.options(), connect_error));
  } catch (...) {
    // Out of memory while formatting: the record is lost, the app is not.
  }
}

void write_pending_open(PendingOpen* open, const config::Policy& policy, const config::Endpoint& local,
                        const config::Endpoint& peer, int connect_error) noexcept {
  const OwnedPendingOpen owned(open, &free_pending_open);
  write_conn_open(*open, policy, local, peer, connect_error);
}

void complete_pending_open(int fd, SocketSlot& slot, const config::Policy& policy, int connect_error,
                           bool established) noexcept {
  const ErrnoSaver saver;
  ConnectionNames* names = names_if_any(slot);
  if (names == nullptr || names->pending.load(std::memory_order_acquire) == nullptr) {
    return;
  }
  const std::uint32_t generation = slot.generation.load(std::memory_order_acquire);
  // Unmarked: an exit is writing the last records, and takes the conn_open with its
  // connection. Only the connection's ends are kept for it then.
  const bool taking = mark_completing_open(slot);
  struct Unmark {
    SocketSlot& slot;
    bool marked;
    ~Unmark() {
      if (marked) {
        unmark_completing_open(slot);
      }
    }
  } const unmark{slot, taking};
  config::Endpoint local;
  config::Endpoint peer;
  if (established) {
    // connect() returned 0: its peer is the address it was given (the kernel names an
    // unspecified one after the address it chose: asked then).
    PendingOpen* open = taking ? take_pending_open(slot, generation) : nullptr;
    if (taking && open == nullptr) {
      return;  // written already
    }
    local = local_endpoint(fd);
    peer = open != nullptr && names_an_end(open->connect_peer) ? open->connect_peer : peer_endpoint(fd);
    names->store(generation, local, peer);
    if (open != nullptr) {
      hand_over_or_write(slot, open, policy, local, peer, 0);
    }
    return;
  }
  if (connect_error == 0) {
    local = local_endpoint(fd);
    peer = peer_endpoint(fd);
    if (peer.family == 0) {
      return;  // SO_ERROR 0 while the handshake is still under way: not complete yet
    }
    names->store(generation, local, peer);
  }
  PendingOpen* open = taking ? take_pending_open(slot, generation) : nullptr;
  if (connect_error != 0) {
    // Never connected: no local end (the kernel let its port go), the peer it was meant for
    // (the exit's record falls back to it too).
    names->store(generation, config::Endpoint{}, open != nullptr ? open->connect_peer : config::Endpoint{});
  }
  if (open != nullptr) {
    hand_over_or_write(slot, open, policy, local, peer, connect_error);
  }
}

bool poll_pending_open(int fd, std::uint32_t generation, const config::Policy& policy) noexcept {
  const ErrnoSaver saver;
  SocketSlot* slot = fd_table().find(fd);
  if (slot == nullptr || slot->generation.load(std::memory_order_acquire) != generation) {
    return true;  // closed: the close handed the conn_open on
  }
  ConnectionNames* names = names_if_any(*slot);
  if (names == nullptr || names->pending.load(std::memory_order_acquire) == nullptr) {
    return true;  // written already
  }
  // SYN_SENT: connecting; CLOSE: connect() not called yet, or failed (the app's next call on it,
  // SO_ERROR or close, says how).
  const std::optional<TcpInfoSummary> info = read_tcp_info(fd);
  if (!info.has_value() || info->state == TCP_SYN_SENT || info->state == TCP_CLOSE) {
    return false;
  }
  const config::Endpoint local = local_endpoint(fd);
  const config::Endpoint peer = peer_endpoint(fd);
  if (slot->generation.load(std::memory_order_acquire) != generation) {
    return true;  // closed while it was read: what was read may be another socket's
  }
  if (PendingOpen* taken = take_pending_open(*slot, generation)) {
    if (peer.family != 0) {
      names->store(generation, local, peer);
    }
    write_pending_open(taken, policy, local, peer);
    note_idle_restart_possible(fd, generation);
  }
  return true;
}

std::string connect_error_name(int error) {
  switch (error) {
    case ECONNREFUSED: return "ECONNREFUSED";
    case ETIMEDOUT: return "ETIMEDOUT";
    case ENETUNREACH: return "ENETUNREACH";
    case EHOSTUNREACH: return "EHOSTUNREACH";
    case ECONNRESET: return "ECONNRESET";
    case ECONNABORTED: return "ECONNABORTED";
    case EADDRNOTAVAIL: return "EADDRNOTAVAIL";
    case EADDRINUSE: return "EADDRINUSE";
    case EACCES: return "EACCES";
    case EPERM: return "EPERM";
    case ENETDOWN: return "ENETDOWN";
    case EHOSTDOWN: return "EHOSTDOWN";
    case EPROTO: return "EPROTO";
    default: return "errno " + std::to_string(error);
  }
}

}  // namespace tcptune::shim
