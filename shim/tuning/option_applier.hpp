// The tuning core: applies a rule's Tuning to one socket at one moment of its life, reads every
// option back, and reports requested and effective values. It knows nothing of the process
// around the socket (no hook, fd table, worker or log): what it needs beyond the fd comes in
// AppSettings and HostBufferFacts, and what the caller must remember goes out in
// TuningOutcome, so a supervisor can run it on a duplicate of another process's socket.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "app_settings.hpp"
#include "tcptune/config/policy.hpp"

namespace tcptune::shim {

enum class ApplyPhase {
  before_connect,      // client, before the SYN leaves: everything, window scale included
  before_listen,       // listener: accepted sockets inherit most of it
  accepted,            // accepted socket whose rule differs from its listener's
  accepted_inherited,  // accepted socket with its listener's rule: only what is not inherited
  adopted_connected,   // connected before we saw it: buffers come too late for the window scale
  // Connected when this program started (inherited across exec): another process may hold
  // it too, mid-message, so nothing that changes how queued bytes go out is touched.
  inherited_connected,
  adopted_listener,  // listening before we saw it (inherited, socket activation)
};
const char* phase_name(ApplyPhase phase);

// What became of one option: decided by the applier, so that callers act on it (a refusal is
// warned about once per rule) without reading the note.
enum class OptionStatus : std::uint8_t {
  applied,        // set; the effective value may still differ (the kernel rounds and clamps)
  capped,         // a buffer set below what was asked, or left to autotuning: a sysctl caps it
  left_alone,     // the app set it itself, another process may own the socket, or not needed
  refused,        // the kernel refused a call (error holds errno)
  not_permitted,  // needs a privilege or a sysctl this process lacks (EPERM)
  unavailable,    // not in this kernel (ENOENT: a module not loaded)
};
const char* status_name(OptionStatus status);

// Where an option's effective value is read from once every option is applied: the reads can
// then wait until a supervised program's call has gone on.
struct EffectiveProbe {
  enum class Kind : std::uint8_t { none, int_option, congestion, keepalive };
  Kind kind = Kind::none;
  int level = 0;
  int name = 0;
  bool operator==(const EffectiveProbe&) const = default;
};

struct OptionReport {
  std::string name;
  std::string requested;
  std::string effective;  // empty until read_effective when the probe says where from
  std::string note;       // plain words: why it differs, why it was skipped
  OptionStatus status = OptionStatus::applied;
  int error = 0;  // errno of the first refused call, 0 if none
  EffectiveProbe probe;

  [[nodiscard]] bool refused() const noexcept {
    return status == OptionStatus::refused || status == OptionStatus::not_permitted ||
           status == OptionStatus::unavailable;
  }
  // Did not take effect as asked (tcptune_options_not_as_requested_total).
  [[nodiscard]] bool missed() const noexcept { return refused() || status == OptionStatus::capped; }
  bool operator==(const OptionReport&) const = default;
};

struct ApplyReport {
  std::vector<OptionReport> options;
  // "nodelay requested=on effective=1; rcvbuf ..." for the connection's log line.
  [[nodiscard]] std::string to_string() const;
  // [{"name","requested","effective","note"}, ...] for a jsonl log.
  [[nodiscard]] std::string to_json() const;
  bool operator==(const ApplyReport&) const = default;
};

// What applying a Tuning leaves for the caller to act on from now on.
struct TuningOutcome {
  ApplyReport report;
  bool veto_nodelay_off = false;      // nodelay = "force": refuse the app's TCP_NODELAY=0 and TCP_CORK=1
  bool push_on_wait = false;          // nodelay = "on-wait": push Nagle's held tail when the app waits
  bool veto_app_buffers = false;      // override_app_buffers: refuse the app's SO_SNDBUF/SO_RCVBUF
  bool rearm_quickack = false;        // quickack: TCP_QUICKACK again after each read
  bool size_sndbuf_from_rtt = false;  // rtt = "auto": apply_measured_rtt_sndbuf once established
};

TuningOutcome apply_tuning(int fd, const AppSettings& app, const config::Tuning& tuning, ApplyPhase phase,
                           const HostBufferFacts& host);

// apply_tuning without reading the options back: read_effective fills the report in later.
TuningOutcome apply_options(int fd, const AppSettings& app, const config::Tuning& tuning, ApplyPhase phase,
                            const HostBufferFacts& host);
void read_effective(int fd, ApplyReport& report);

// Whether `fd` has this keepalive (on, with its idle, interval and count), as apply_tuning sets
// it: the supervisor keeps it against the program's later keepalive calls only where it is.
bool keepalive_in_effect(int fd, const config::Keepalive& keepalive) noexcept;

// rtt = "auto": size the send buffer from the RTT measured on the established connection.
// Returns an empty report when the RTT is not known yet (call again later).
ApplyReport apply_measured_rtt_sndbuf(int fd, const config::Tuning& tuning, const HostBufferFacts& host);

}  // namespace tcptune::shim
