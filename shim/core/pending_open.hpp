// A client's conn_open waits for its connect to complete, so that it names both ends: the rule
// is applied before the SYN (the window scale is chosen then), when the kernel has given the
// socket no local address yet. It is written by whichever comes first: the connect returning (or
// failing), the app asking SO_ERROR after a non-blocking connect, the worker finding the
// connection established (a program that writes without asking), its close, or the exit. Until
// then it waits in the slot's names (connection_names.hpp), built off the write path; the close
// hands it on in the connection's snapshot without formatting anything.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "callsite.hpp"
#include "option_applier.hpp"
#include "record.hpp"
#include "socket_role.hpp"
#include "tcptune/config/cidr.hpp"
#include "tcptune/config/policy.hpp"

namespace tcptune::shim {

struct SocketSlot;

struct PendingOpen {
  int fd = -1;
  std::uint32_t generation = 0;  // the slot's connection it belongs to
  int rule = -1;
  SocketRole role = SocketRole::client;
  ApplyPhase phase = ApplyPhase::before_connect;
  config::Endpoint connect_peer;  // the address given to connect(): the peer when the kernel no longer says
  CallSite site;
  // The options' report: an interned one (interned_reports.hpp), or, past their number, one of
  // the heap's that whoever holds this PendingOpen owns (`owns_report`). Plain data, so that a
  // conn_open travels by copy in the worker's ring.
  const ApplyReport* report = nullptr;
  bool owns_report = false;

  [[nodiscard]] const ApplyReport& options() const noexcept;
};

// `report` kept in `open`: interned, or moved to the heap. Not from a signal handler.
void keep_report(PendingOpen& open, ApplyReport&& report);
// Frees the report `open` owns, if it owns one: `open` is done with.
void release_report(const PendingOpen& open) noexcept;

// A PendingOpen holding `contents` (and what it owns): one given back to the reserve when there
// is one, else a new one. Freed with free_pending_open. Not from a signal handler.
PendingOpen* new_pending_open(const PendingOpen& contents);
// Gives `open` back with its report (the worker, once its record is written). Lock-free; no
// allocation when it came from new_pending_open's reserve.
void free_pending_open(PendingOpen* open) noexcept;
// One owned until it is written, given back whichever way the writing ends.
using OwnedPendingOpen = std::unique_ptr<PendingOpen, decltype(&free_pending_open)>;

// The conn_open record of a socket: `local` and `peer` left out where unknown (family 0, or a
// local port of 0: no address yet); `connect_error`, an errno, when the connect failed.
telemetry::Record conn_open_record(int fd, SocketRole role, const config::Policy& policy, int rule, ApplyPhase phase,
                                   const config::Endpoint& local, const config::Endpoint& peer, const CallSite& site,
                                   const ApplyReport& report, int connect_error = 0);

// Parks `open` in the slot until the connect completes. False (nothing parked; the caller writes
// the record at once) when the slot's names cannot be had. Off the write path.
bool park_pending_open(SocketSlot& slot, PendingOpen* open) noexcept;

// The slot's pending conn_open for connection `generation`, now the caller's; nullptr when
// there is none (written already) or it is another connection's. Lock-free, no allocation,
// async-signal-safe.
PendingOpen* take_pending_open(SocketSlot& slot, std::uint32_t generation) noexcept;

// Writes `open`'s conn_open with the endpoints it completed with: `peer` falls back to the
// address given to connect(). Off the write path.
void write_conn_open(const PendingOpen& open, const config::Policy& policy, const config::Endpoint& local,
                     const config::Endpoint& peer, int connect_error = 0) noexcept;
// write_conn_open, then free_pending_open.
void write_pending_open(PendingOpen* open, const config::Policy& policy, const config::Endpoint& local,
                        const config::Endpoint& peer, int connect_error = 0) noexcept;

// The app's thread saw the connect end: `connect_error` 0 when it is established. Reads the
// endpoints, keeps them in the slot and hands the conn_open, if it still waits, to the worker
// (which writes it with the other records; at _exit the exiting thread writes what the worker
// was handed), or writes it when the worker cannot take it. Not from a signal handler.
// `established`: connect() itself returned 0, so the peer is the address it was given.
void complete_pending_open(int fd, SocketSlot& slot, const config::Policy& policy, int connect_error,
                           bool established = false) noexcept;

// The worker's look at a connect it was told of (post_pending_open): once the connection is
// established, its endpoints are kept and its conn_open written. True when nothing is left to
// wait for (written now or by another, or the descriptor closed); false: look again later.
bool poll_pending_open(int fd, std::uint32_t generation, const config::Policy& policy) noexcept;

// The errno of a failed connect as conn_open names it ("ECONNREFUSED", ...).
std::string connect_error_name(int error);

}  // namespace tcptune::shim
