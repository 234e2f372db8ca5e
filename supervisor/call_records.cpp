#include "call_records.hpp"

#include <cstdio>

#include "conn_open_record.hpp"
#include "tcptune/config/escape.hpp"
#include "tcptune/config/rule_matcher.hpp"

namespace tcptune::supervisor {

namespace {

// What supervised mode cannot do for a rule, said in the socket's report rather than silently.
void report_what_supervision_lacks(const config::Tuning& tuning, shim::TuningOutcome& outcome) {
  const auto left_alone = [&outcome](std::string name, std::string requested, std::string effective, std::string note) {
    outcome.report.options.push_back({std::move(name),
                                      std::move(requested),
                                      std::move(effective),
                                      std::move(note),
                                      shim::OptionStatus::left_alone,
                                      0,
                                      {}});
  };
  if (tuning.keep_warm.has_value()) {
    left_alone("keep_warm", config::describe_keep_warm(*tuning.keep_warm), "off",
               "not in supervised mode: a heartbeat from outside the program could land inside one of its messages; "
               "use congestion = \"bbr\" or net.ipv4.tcp_slow_start_after_idle=0 in the namespace");
  }
  if (outcome.rearm_quickack) {
    left_alone("quickack", "on", "once",
               "set once before the connection; re-arming it after each read needs the program's reads, which the "
               "supervisor does not see");
  }
  if (outcome.size_sndbuf_from_rtt) {
    left_alone("rtt", "auto", "not measured",
               "sizing the send buffer from the measured RTT needs the established socket, which the supervisor does "
               "not hold; give rtt a value");
  }
}

}  // namespace

CallRecords::CallRecords(const config::Policy& policy, SupervisorLog& log, ConnectionWatch* watch,
                         const SocketAccess& access)
    : policy_(policy), log_(log), watch_(watch), access_(access) {}

void CallRecords::record(FollowUp& done) {
  try {
    switch (done.call) {
      case FollowUp::Call::connect:
      case FollowUp::Call::listen: record_tuned(done); break;
      case FollowUp::Call::setsockopt: record_setsockopt(done); break;
      case FollowUp::Call::not_inspectable:
      case FollowUp::Call::out_of_descriptors:
      case FollowUp::Call::privileges_stripped:
      case FollowUp::Call::not_handed_over:
      case FollowUp::Call::hand_over_refused:
      case FollowUp::Call::unreachable_setsockopt: record_untuned(done); break;
      case FollowUp::Call::seen_by_inode:
        if (watch_ != nullptr) {
          watch_->watch_by_inode(done.inode, done.app_fd, done.process, done.program);
        }
        break;
    }
  } catch (...) {
    // out of memory: the record is lost, the program is not affected
  }
}

void CallRecords::warn_once(const std::string& key, pid_t pid, const std::string& program, const std::string& message) {
  if (!warned_.insert(key).second) {
    return;
  }
  (void)std::fprintf(stderr, "tcptune: %s\n", message.c_str());
  telemetry::Record record("supervisor_warning");
  record.add("message", message);
  log_.write(config::LogLevel::warn, pid, program, record);
}

std::vector<telemetry::OptionMiss> CallRecords::option_misses() const {
  std::vector<telemetry::OptionMiss> out;
  for (const auto& [key, count] : option_misses_) {
    const auto& [rule, option, outcome] = key;
    out.push_back({std::string(config::rule_name(policy_, rule)), option, outcome, count});
  }
  return out;
}

void CallRecords::record_tuned(FollowUp& done) {
  const bool is_connect = done.call == FollowUp::Call::connect;
  const config::Tuning& tuning = config::tuning_for(policy_, done.rule);
  const pid_t pid = done.process;
  const std::string& program = done.program;
  report_what_supervision_lacks(tuning, done.outcome);
  for (const shim::OptionReport& option : done.outcome.report.options) {
    if (option.missed()) {
      ++option_misses_[{done.rule, option.name, shim::status_name(option.status)}];
    }
    if (option.refused() || (option.name == "keep_warm" && tuning.keep_warm.has_value())) {
      const std::string rule_name(config::rule_name(policy_, done.rule));
      warn_once(rule_name + "/" + option.name, pid, program,
                "rule=\"" + rule_name + "\" " + option.name + ": " + option.note + " (logged once per rule)");
    }
  }
  const std::uint64_t inode = done.inode;
  const bool records = log_.enabled(config::LogLevel::info);
  if (is_connect && watch_ != nullptr) {
    // Its conn_open once the watch sees both ends (connection_watch.hpp).
    watch_->watch_connection(inode, done.app_fd, shim::SocketRole::client, done.rule, pid, program,
                             {done.local, done.peer, done.cookie, done.family},
                             records ? std::optional<shim::ApplyReport>(std::move(done.outcome.report)) : std::nullopt);
    return;
  }
  if (watch_ != nullptr) {
    watch_->watch_listener(done.inode, done.local, done.family, pid, program);
  }
  if (records) {
    const shim::ApplyPhase phase = is_connect ? shim::ApplyPhase::before_connect : shim::ApplyPhase::before_listen;
    log_.write(config::LogLevel::info, pid, program,
               supervised_conn_open(done.app_fd, is_connect ? shim::SocketRole::client : shim::SocketRole::listener,
                                    policy_, done.rule, phase, done.local, done.peer, inode, done.outcome.report));
  }
}

void CallRecords::record_setsockopt(FollowUp& done) {
  const pid_t pid = done.process;
  if (watch_ != nullptr && done.accepted && done.inode != 0) {
    watch_->watch_connection(done.inode, done.app_fd, shim::SocketRole::server, done.rule, pid, done.program,
                             {done.local, done.peer, 0, done.family});
  }
  if (done.kept_option == nullptr) {
    return;
  }
  const std::string rule_name(config::rule_name(policy_, done.rule));
  if (log_.enabled(config::LogLevel::info) && vetoes_logged_.insert(rule_name + "/" + done.kept_option).second) {
    telemetry::Record record("veto");
    record.add("fd", done.app_fd)
        .add("rule", rule_name)
        .add("option", done.kept_option)
        .add("app_value", done.app_value)
        .add("supervised", true)
        .add("note",
             "the program's setsockopt answered without being made: the rule's value stays (logged once per "
             "rule and option)");
    log_.write(config::LogLevel::info, pid, done.program, record);
  }
}

void CallRecords::record_untuned(const FollowUp& done) {
  const pid_t pid = done.process;
  const std::string who = config::escape_for_display(done.program, false) + " (pid " + std::to_string(pid) + ")";
  if (done.call == FollowUp::Call::not_handed_over) {
    warn_once("not_handed_over/" + done.program, pid, done.program,
              who + " " + done.note + "s on fd " + std::to_string(done.app_fd) +
                  ", a TCP socket tcptune did not create (inherited, made by a call the filter does not see, moved "
                  "to another descriptor, or one tcptune could not hand over), and " +
                  describe_refusal(access_) + ": such sockets run untuned; to tune them, " + kAllowPidfdGetfd +
                  " (logged once per program)");
    return;
  }
  if (done.call == FollowUp::Call::hand_over_refused) {
    warn_once("hand_over_refused/" + done.key + "/" + done.program, pid, done.program,
              "cannot create the TCP sockets of " + who + " for it: " + done.note + "; " + describe_refusal(access_) +
                  ", so they run untuned; to tune them, " + kAllowPidfdGetfd + " (logged once per program and cause)");
    return;
  }
  if (done.call == FollowUp::Call::unreachable_setsockopt) {
    warn_once("unreachable_setsockopt/" + done.program, pid, done.program,
              who + " sets " + done.note +
                  " on a TCP socket tcptune did not create (an accepted one: accepted sockets never pass through "
                  "tcptune, and " +
                  describe_refusal(access_) +
                  "): made as asked, so a rule's keepalive or nodelay = \"force\" is not kept on such sockets; "
                  "to keep it, " +
                  kAllowPidfdGetfd + " (logged once per program)");
    return;
  }
  if (done.call == FollowUp::Call::not_inspectable) {
    warn_once("eperm/" + done.program, pid, done.program,
              done.program + " (pid " + std::to_string(pid) +
                  ") may not be inspected by this user (it is not dumpable: an unreadable or setuid binary, or it "
                  "made itself so with prctl(PR_SET_DUMPABLE)); its sockets run untuned");
  } else if (done.call == FollowUp::Call::privileges_stripped) {
    warn_once("nnp/" + done.note, pid, done.program,
              done.note + ": run by " + config::escape_for_display(done.program, false) + " (pid " +
                  std::to_string(pid) +
                  ") under no_new_privs, it runs without those privileges (logged once per file)");
  } else {
    warn_once("emfile", pid, done.program,
              "tcptune has run out of file descriptors (ulimit -n): the sockets it cannot duplicate run untuned "
              "(logged once)");
  }
}

}  // namespace tcptune::supervisor
