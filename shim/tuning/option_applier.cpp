#include "option_applier.hpp"

#include <netinet/in.h>
#include <netinet/ip.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <system_error>
#include <tuple>

#include "errno_saver.hpp"
#include "json_writer.hpp"
#include "socket_calls.hpp"
#include "socket_probe.hpp"
#include "tcptune/config/buffer_plan.hpp"
#include "tcptune/config/units.hpp"

namespace tcptune::shim {

namespace {

std::string effective_int(int fd, int level, int name) {
  const auto value = get_int_option(fd, level, name);
  return value.has_value() ? std::to_string(*value) : "?";
}

EffectiveProbe int_probe(int level, int name) {
  return {EffectiveProbe::Kind::int_option, level, name};
}
constexpr EffectiveProbe kCongestionProbe{EffectiveProbe::Kind::congestion, 0, 0};
constexpr EffectiveProbe kKeepaliveProbe{EffectiveProbe::Kind::keepalive, 0, 0};

// setsockopt with an int: 0, or the errno it failed with.
int set_int(int fd, int level, int name, int value) {
  return core_setsockopt(fd, level, name, &value, sizeof value) == 0 ? 0 : errno;
}

// strerror's text without its buffer, which the app's threads may be using too.
std::string refusal_text(int error) {
  return "refused: " + std::generic_category().message(error);
}

// The note and status of one call's outcome.
std::string note_of(int error) {
  return error == 0 ? std::string() : refusal_text(error);
}

constexpr const char* kInheritedNote =
    "inherited connected socket: another process may be in the middle of a message on it; left alone";

int seconds_rounded_up(config::Duration d) {
  const auto s = std::chrono::ceil<std::chrono::seconds>(d).count();
  return static_cast<int>(s < 1 ? 1 : s);
}

class Applier {
 public:
  Applier(int fd, const AppSettings& app, ApplyPhase phase, const HostBufferFacts& host, bool raw_nodelay = false)
      : fd_(fd), app_(app), phase_(phase), host_(host), raw_nodelay_(raw_nodelay) {}

  TuningOutcome take() { return std::move(outcome_); }
  TuningOutcome& outcome() { return outcome_; }

  bool app_set(AppOption option) const { return (app_.app_options & option) != 0; }
  void add(std::string name, std::string requested, EffectiveProbe effective, std::string note = {},
           OptionStatus status = OptionStatus::applied, int error = 0) {
    outcome_.report.options.push_back(
        {std::move(name), std::move(requested), {}, std::move(note), status, error, effective});
  }
  // A setsockopt's outcome: applied, or refused with its errno.
  void add_result(std::string name, std::string requested, EffectiveProbe effective, int error) {
    add(std::move(name), std::move(requested), effective, note_of(error),
        error == 0 ? OptionStatus::applied : OptionStatus::refused, error);
  }
  void left_alone(std::string name, std::string requested, EffectiveProbe effective, std::string note) {
    add(std::move(name), std::move(requested), effective, std::move(note), OptionStatus::left_alone);
  }
  void skip_app_owned(const char* name, const std::string& requested, int level, int option) {
    left_alone(name, requested, int_probe(level, option), "the app set it itself; left alone");
  }

  void nodelay(config::NodelayMode mode) {
    using config::NodelayMode;
    if (mode == NodelayMode::keep) {
      return;
    }
    const char* requested = mode == NodelayMode::on        ? "on"
                            : mode == NodelayMode::force   ? "force"
                            : mode == NodelayMode::on_wait ? "on-wait"
                                                           : "off";
    if (phase_ == ApplyPhase::inherited_connected) {
      // Setting TCP_NODELAY pushes out what the other owner holds back (MSG_MORE, Nagle).
      left_alone("nodelay", requested, int_probe(IPPROTO_TCP, TCP_NODELAY), kInheritedNote);
      return;
    }
    if (mode == NodelayMode::on_wait) {
      push_on_wait(requested);
      return;
    }
    if (mode == NodelayMode::force) {
      outcome_.veto_nodelay_off = true;
    } else if (app_set(app_nodelay)) {
      skip_app_owned("nodelay", requested, IPPROTO_TCP, TCP_NODELAY);
      return;
    }
    const int error = set_int(fd_, IPPROTO_TCP, TCP_NODELAY, mode == NodelayMode::off ? 0 : 1);
    add_result("nodelay", requested, int_probe(IPPROTO_TCP, TCP_NODELAY), error);
  }

  // Nagle is left on; the caller pushes its held tail when the app waits for input. Nothing to
  // push where the app (or the listener it accepted from) turned Nagle off.
  void push_on_wait(const char* requested) {
    const EffectiveProbe probe = int_probe(IPPROTO_TCP, TCP_NODELAY);
    if (app_set(app_nodelay)) {
      skip_app_owned("nodelay", requested, IPPROTO_TCP, TCP_NODELAY);
      return;
    }
    if (!app_.sees_waits) {
      left_alone("nodelay", requested, probe,
                 "supervised: the program's waits for input are not seen, so Nagle is left to the program");
      return;
    }
    const std::optional<int> nodelay =
        app_.nodelay_known_off ? std::optional<int>(0) : get_int_option(fd_, IPPROTO_TCP, TCP_NODELAY);
    if (nodelay.value_or(0) != 0) {
      left_alone("nodelay", requested, probe, "TCP_NODELAY is already on (inherited from the listener); left alone");
      return;
    }
    outcome_.push_on_wait = true;
    add("nodelay", requested, probe,
        "Nagle stays on; what it holds back is pushed when a thread that wrote waits for input");
    if (nodelay.has_value() && !raw_nodelay_) {
      // Nothing this applier does afterwards changes it: the value just read is the effective one.
      OptionReport& added = outcome_.report.options.back();
      added.effective = std::to_string(*nodelay);
      added.probe = {};
    }
  }

  // No rule sizes buffers, so the app's own SO_*BUF went straight to the kernel: said, because
  // a buffer the app pins is what a receive-window-limited transfer needs overridden.
  void app_buffers_passed() {
    for (const auto& [bit, name, option] :
         {std::tuple{app_rcvbuf, "rcvbuf", SO_RCVBUF}, std::tuple{app_sndbuf, "sndbuf", SO_SNDBUF}}) {
      if (app_set(bit)) {
        left_alone(name, "app (its own value)", int_probe(SOL_SOCKET, option),
                   "the app set it itself before connect or listen; no rule sizes buffers");
      }
    }
  }

  void buffers(const config::Tuning& tuning) {
    const bool override_app = tuning.override_app_buffers.value_or(false);
    if (override_app) {
      outcome_.veto_app_buffers = true;
    }
    const config::BufferSpec spec = tuning.buffers.value_or(config::BufferSpec{});
    if (phase_ == ApplyPhase::accepted_inherited) {
      if (tuning.buffers.has_value()) {
        left_alone("rcvbuf", "inherited", int_probe(SOL_SOCKET, SO_RCVBUF), "set on the listener");
      }
      return;
    }
    std::optional<std::uint64_t> bdp;
    if (spec.bandwidth_bytes_per_s.has_value() && spec.rtt.has_value() && !spec.rtt_auto) {
      bdp = config::bdp_target(*spec.bandwidth_bytes_per_s, *spec.rtt);
    }
    direction("rcvbuf", SO_RCVBUF, SO_RCVBUFFORCE, app_.held_rcvbuf, spec.rcvbuf, bdp, host_.rcvbuf,
              host_.cap_net_admin, override_app);
    if (spec.rtt_auto && !spec.sndbuf.has_value()) {
      outcome_.size_sndbuf_from_rtt = true;
      add("sndbuf", "bandwidth x measured rtt", int_probe(SOL_SOCKET, SO_SNDBUF),
          "sized once the connection is established");
      drop_or_apply_held("sndbuf", SO_SNDBUF, app_.held_sndbuf, override_app, /*policy_sizes_it=*/true);
      return;
    }
    direction("sndbuf", SO_SNDBUF, SO_SNDBUFFORCE, app_.held_sndbuf, spec.sndbuf, bdp, host_.sndbuf,
              host_.cap_net_admin, override_app);
  }

  // Pins one direction per config::plan_buffer, trying the FORCE variant when it plans to.
  void pin(const char* name, int option, int force_option, std::uint64_t target, bool explicit_size,
           const config::BufferLimits& limits, bool cap_net_admin) {
    config::BufferDecision decision = config::plan_buffer(target, explicit_size, limits, cap_net_admin, name);
    std::string note = decision.reason;
    int first_error = 0;
    if (decision.action == config::BufferAction::pin_forced) {
      first_error = set_int(fd_, SOL_SOCKET, force_option, static_cast<int>(decision.value));
      if (first_error == 0) {
        add(name, config::format_size(target), int_probe(SOL_SOCKET, option), note);
        return;
      }
      decision = config::plan_buffer(target, explicit_size, limits, false, name);
      note = std::string(option == SO_RCVBUF ? "SO_RCVBUFFORCE " : "SO_SNDBUFFORCE ") + refusal_text(first_error) +
             "; " + decision.reason;
    }
    if (decision.action == config::BufferAction::pin) {
      const int error = set_int(fd_, SOL_SOCKET, option, static_cast<int>(decision.value));
      if (error != 0) {
        note += "; " + refusal_text(error);
        first_error = first_error == 0 ? error : first_error;
      }
    }
    if (option == SO_RCVBUF && (phase_ == ApplyPhase::adopted_connected || phase_ == ApplyPhase::accepted ||
                                phase_ == ApplyPhase::adopted_listener || phase_ == ApplyPhase::inherited_connected)) {
      note += "; applied too late for the window scale, which was chosen at the handshake";
    }
    // Below the request: pinned at the sysctl's ceiling, or left to an autotuning that cannot
    // reach it either (autotuning's numbers are in kernel bytes, twice setsockopt's).
    const bool capped =
        limits.core_max != 0 && target > limits.core_max &&
        (decision.action == config::BufferAction::pin
             ? decision.value < target
             : decision.action == config::BufferAction::leave_autotuning && limits.autotune_max < 2 * target);
    add(name, config::format_size(target), int_probe(SOL_SOCKET, option), note,
        first_error != 0 ? OptionStatus::refused
        : capped         ? OptionStatus::capped
                         : OptionStatus::applied,
        first_error);
  }

  void direction(const char* name, int option, int force_option, std::int32_t held,
                 std::optional<std::uint64_t> explicit_size, std::optional<std::uint64_t> bdp,
                 const config::BufferLimits& limits, bool cap_net_admin, bool override_app) {
    const bool policy_sizes_it = explicit_size.has_value() || bdp.has_value();
    if (!drop_or_apply_held(name, option, held, override_app, policy_sizes_it)) {
      return;  // the app's own value stands
    }
    if (explicit_size.has_value()) {
      pin(name, option, force_option, *explicit_size, true, limits, cap_net_admin);
    } else if (bdp.has_value()) {
      pin(name, option, force_option, *bdp, false, limits, cap_net_admin);
    }
  }

  // The app's held-back SO_*BUF: dropped when the policy overrides it, applied otherwise.
  // Returns whether the policy may size this direction.
  bool drop_or_apply_held(const char* name, int option, std::int32_t app_value, bool override_app,
                          bool policy_sizes_it) {
    if (app_value == kNoHeldBuffer) {
      return true;
    }
    const std::string requested = "app " + std::to_string(app_value);
    if (override_app) {
      add(name, requested, int_probe(SOL_SOCKET, option),
          policy_sizes_it ? "the app's value was dropped (override_app_buffers); the policy sizes it"
                          : "the app's value was dropped (override_app_buffers); autotuning stays on");
      return true;
    }
    const int error = set_int(fd_, SOL_SOCKET, option, app_value);
    add(name, requested, int_probe(SOL_SOCKET, option),
        error == 0 ? "the app's own value, applied before the handshake" : refusal_text(error),
        error == 0 ? OptionStatus::applied : OptionStatus::refused, error);
    return false;
  }

  void congestion(const std::string& algorithm) {
    if (app_set(app_congestion)) {
      left_alone("congestion", algorithm, kCongestionProbe, "the app set it itself; left alone");
      return;
    }
    std::string note;
    OptionStatus status = OptionStatus::applied;
    int error = 0;
    if (core_setsockopt(fd_, IPPROTO_TCP, TCP_CONGESTION, algorithm.data(), static_cast<socklen_t>(algorithm.size())) !=
        0) {
      error = errno;
      const std::string current = get_congestion(fd_);
      if (error == EPERM) {
        status = OptionStatus::not_permitted;
        note = algorithm +
               " is not in net.ipv4.tcp_allowed_congestion_control and this process lacks "
               "CAP_NET_ADMIN; keeping " +
               current;
      } else if (error == ENOENT) {
        status = OptionStatus::unavailable;
        note = algorithm + " is not available in this kernel (module not loaded); keeping " + current;
      } else {
        status = OptionStatus::refused;
        note = refusal_text(error) + "; keeping " + current;
      }
    }
    add("congestion", algorithm, kCongestionProbe, note, status, error);
  }

  void keepalive(const config::Keepalive& keepalive) {
    const std::string requested = config::format_duration(keepalive.idle);
    if (app_set(app_keepalive)) {
      skip_app_owned("keepalive", requested, SOL_SOCKET, SO_KEEPALIVE);
      return;
    }
    int first_error = set_int(fd_, SOL_SOCKET, SO_KEEPALIVE, 1);
    std::string note = note_of(first_error);
    auto also = [&](int option, int value) {
      const int error = set_int(fd_, IPPROTO_TCP, option, value);
      if (error != 0) {
        note += (note.empty() ? "" : "; ") + refusal_text(error);
        first_error = first_error == 0 ? error : first_error;
      }
    };
    also(TCP_KEEPIDLE, seconds_rounded_up(keepalive.idle));
    if (keepalive.interval.count() > 0) {
      also(TCP_KEEPINTVL, seconds_rounded_up(keepalive.interval));
    }
    if (keepalive.count > 0) {
      also(TCP_KEEPCNT, keepalive.count);
    }
    add("keepalive",
        "idle=" + std::to_string(seconds_rounded_up(keepalive.idle)) + "s interval=" +
            (keepalive.interval.count() > 0 ? std::to_string(seconds_rounded_up(keepalive.interval)) + "s" : "kernel") +
            " count=" + (keepalive.count > 0 ? std::to_string(keepalive.count) : "kernel"),
        kKeepaliveProbe, note, first_error == 0 ? OptionStatus::applied : OptionStatus::refused, first_error);
  }

  void int_option(const char* name, AppOption owner, int level, int option, int value, std::string requested) {
    if (app_set(owner)) {
      skip_app_owned(name, requested, level, option);
      return;
    }
    const int error = set_int(fd_, level, option, value);
    add_result(name, std::move(requested), int_probe(level, option), error);
  }

  void tos(int value) {
    const int family = socket_family(fd_);
    const int level = family == AF_INET6 ? IPPROTO_IPV6 : IPPROTO_IP;
    const int option = family == AF_INET6 ? IPV6_TCLASS : IP_TOS;
    int_option("tos", app_tos, level, option, value, std::to_string(value));
    if (family == AF_INET6) {
      // A dual-stack socket talking to a v4-mapped peer sends IPv4 packets.
      (void)set_int(fd_, IPPROTO_IP, IP_TOS, value);
    }
  }

  void raw(const config::RawSockopt& opt) {
    if (phase_ == ApplyPhase::inherited_connected && opt.level == IPPROTO_TCP &&
        (opt.name == TCP_NODELAY || opt.name == TCP_CORK)) {
      left_alone(opt.option_name, std::to_string(opt.value), int_probe(opt.level, opt.name), kInheritedNote);
      return;
    }
    const int error = set_int(fd_, opt.level, opt.name, opt.value);
    add_result(opt.option_name, std::to_string(opt.value), int_probe(opt.level, opt.name), error);
  }

 private:
  int fd_;
  const AppSettings& app_;
  ApplyPhase phase_;
  const HostBufferFacts& host_;
  bool raw_nodelay_;  // the policy's raw sockopts set TCP_NODELAY after nodelay is applied
  TuningOutcome outcome_;
};

}  // namespace

const char* status_name(OptionStatus status) {
  switch (status) {
    case OptionStatus::applied: return "applied";
    case OptionStatus::left_alone: return "left_alone";
    case OptionStatus::capped: return "capped";
    case OptionStatus::refused: return "refused";
    case OptionStatus::not_permitted: return "not_permitted";
    case OptionStatus::unavailable: return "unavailable";
  }
  return "?";
}

const char* phase_name(ApplyPhase phase) {
  switch (phase) {
    case ApplyPhase::before_connect: return "before_connect";
    case ApplyPhase::before_listen: return "before_listen";
    case ApplyPhase::accepted: return "accepted";
    case ApplyPhase::accepted_inherited: return "accepted_inherited";
    case ApplyPhase::adopted_connected: return "adopted_connected";
    case ApplyPhase::inherited_connected: return "inherited_connected";
    case ApplyPhase::adopted_listener: return "adopted_listener";
  }
  return "?";
}

std::string ApplyReport::to_string() const {
  std::string out;
  for (const OptionReport& option : options) {
    if (!out.empty()) {
      out += " |";
    }
    out += " " + option.name + " requested=\"" + option.requested + "\" effective=\"" + option.effective + "\"";
    if (!option.note.empty()) {
      out += " note=\"" + option.note + "\"";
    }
  }
  return out;
}

std::string ApplyReport::to_json() const {
  telemetry::JsonArray array;
  for (const OptionReport& option : options) {
    telemetry::JsonObject object;
    object.field("name", option.name).field("requested", option.requested).field("effective", option.effective);
    if (!option.note.empty()) {
      object.field("note", option.note);
    }
    if (option.status != OptionStatus::applied) {  // what the note says, for readers (tcptune advise)
      object.field("status", status_name(option.status));
    }
    array.add_raw(object.str());
  }
  return array.str();
}

void read_effective(int fd, ApplyReport& report) {
  const ErrnoSaver saver;
  for (OptionReport& option : report.options) {
    const EffectiveProbe& probe = option.probe;
    switch (probe.kind) {
      case EffectiveProbe::Kind::none: continue;
      case EffectiveProbe::Kind::int_option: option.effective = effective_int(fd, probe.level, probe.name); break;
      case EffectiveProbe::Kind::congestion: option.effective = get_congestion(fd); break;
      case EffectiveProbe::Kind::keepalive:
        option.effective = "on=" + effective_int(fd, SOL_SOCKET, SO_KEEPALIVE) +
                           " idle=" + effective_int(fd, IPPROTO_TCP, TCP_KEEPIDLE) +
                           "s interval=" + effective_int(fd, IPPROTO_TCP, TCP_KEEPINTVL) +
                           "s count=" + effective_int(fd, IPPROTO_TCP, TCP_KEEPCNT);
        break;
    }
    option.probe = {};
  }
}

TuningOutcome apply_tuning(int fd, const AppSettings& app, const config::Tuning& tuning, ApplyPhase phase,
                           const HostBufferFacts& host) {
  TuningOutcome outcome = apply_options(fd, app, tuning, phase, host);
  read_effective(fd, outcome.report);
  return outcome;
}

TuningOutcome apply_options(int fd, const AppSettings& app, const config::Tuning& tuning, ApplyPhase phase,
                            const HostBufferFacts& host) {
  const ErrnoSaver saver;
  const bool raw_nodelay =
      std::any_of(tuning.sockopts.begin(), tuning.sockopts.end(),
                  [](const config::RawSockopt& opt) { return opt.level == IPPROTO_TCP && opt.name == TCP_NODELAY; });
  Applier applier(fd, app, phase, host, raw_nodelay);
  if (tuning.nodelay.has_value()) {
    applier.nodelay(*tuning.nodelay);
  }
  if (tuning.buffers.has_value() || tuning.override_app_buffers.value_or(false) || app.held_rcvbuf != kNoHeldBuffer ||
      app.held_sndbuf != kNoHeldBuffer) {
    applier.buffers(tuning);
  } else {
    applier.app_buffers_passed();
  }
  if (tuning.congestion.has_value()) {
    applier.congestion(*tuning.congestion);
  }
  if (tuning.keepalive.has_value()) {
    applier.keepalive(*tuning.keepalive);
  }
  if (tuning.user_timeout.has_value()) {
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(*tuning.user_timeout).count();
    applier.int_option("user_timeout", app_user_timeout, IPPROTO_TCP, TCP_USER_TIMEOUT, static_cast<int>(ms),
                       std::to_string(ms) + "ms");
  }
  if (tuning.notsent_lowat.has_value()) {
    applier.int_option("notsent_lowat", app_notsent_lowat, IPPROTO_TCP, TCP_NOTSENT_LOWAT,
                       static_cast<int>(*tuning.notsent_lowat), std::to_string(*tuning.notsent_lowat));
  }
  if (tuning.thin_linear_timeouts.has_value()) {
    applier.int_option("thin_linear_timeouts", app_thin_linear, IPPROTO_TCP, TCP_THIN_LINEAR_TIMEOUTS,
                       *tuning.thin_linear_timeouts ? 1 : 0, *tuning.thin_linear_timeouts ? "1" : "0");
  }
  if (tuning.quickack.value_or(false)) {
    applier.outcome().rearm_quickack = true;
    applier.int_option("quickack", AppOption{}, IPPROTO_TCP, TCP_QUICKACK, 1, "1 (re-armed after each read)");
  }
  if (tuning.tos.has_value()) {
    applier.tos(*tuning.tos);
  }
  for (const config::RawSockopt& opt : tuning.sockopts) {
    applier.raw(opt);
  }
  return applier.take();
}

bool keepalive_in_effect(int fd, const config::Keepalive& keepalive) noexcept {
  const auto is = [fd](int level, int name, int expected) {
    return get_int_option(fd, level, name) == std::optional<int>(expected);
  };
  return is(SOL_SOCKET, SO_KEEPALIVE, 1) && is(IPPROTO_TCP, TCP_KEEPIDLE, seconds_rounded_up(keepalive.idle)) &&
         (keepalive.interval.count() <= 0 || is(IPPROTO_TCP, TCP_KEEPINTVL, seconds_rounded_up(keepalive.interval))) &&
         (keepalive.count <= 0 || is(IPPROTO_TCP, TCP_KEEPCNT, keepalive.count));
}

ApplyReport apply_measured_rtt_sndbuf(int fd, const config::Tuning& tuning, const HostBufferFacts& host) {
  const ErrnoSaver saver;
  const auto info = get_tcp_info(fd);
  if (!info.has_value() || info->tcpi_rtt == 0 || !tuning.buffers.has_value() ||
      !tuning.buffers->bandwidth_bytes_per_s.has_value()) {
    return {};
  }
  const config::Duration rtt = std::chrono::microseconds(info->tcpi_rtt);
  const std::uint64_t target = config::bdp_target(*tuning.buffers->bandwidth_bytes_per_s, rtt);
  const AppSettings app;
  Applier applier(fd, app, ApplyPhase::adopted_connected, host);
  applier.pin("sndbuf", SO_SNDBUF, SO_SNDBUFFORCE, target, false, host.sndbuf, host.cap_net_admin);
  ApplyReport report = applier.take().report;
  read_effective(fd, report);
  for (OptionReport& option : report.options) {
    option.note = "measured rtt " + config::format_duration(rtt) + "; " + option.note;
  }
  return report;
}

}  // namespace tcptune::shim
