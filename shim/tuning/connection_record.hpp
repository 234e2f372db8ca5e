// The records of a tuned connection that the preloaded shim and the supervisor both write: the
// socket the policy was applied to (conn_open, conn_rtt_auto: which rule, at which moment,
// between which endpoints; the caller adds what only it knows, a callsite, then the options),
// and the TCP_INFO a conn_close reports.
#pragma once

#include "option_applier.hpp"
#include "record.hpp"
#include "socket_role.hpp"
#include "tcp_info_reader.hpp"
#include "tcptune/config/cidr.hpp"
#include "tcptune/config/policy.hpp"

namespace tcptune::shim {

// `fd` is the socket asked for its endpoints; `app_fd` its number in the program (the same in the
// shim; the supervisor asks a duplicate).
telemetry::Record connection_record(const char* event, int fd, int app_fd, SocketRole role,
                                    const config::Policy& policy, int rule, ApplyPhase phase);
// The same with the endpoints known already (family 0: not known, left out).
telemetry::Record connection_record(const char* event, int app_fd, SocketRole role, const config::Policy& policy,
                                    int rule, ApplyPhase phase, const config::Endpoint& local,
                                    const config::Endpoint& peer);

// A closing connection's last TCP_INFO, as conn_close's "tcp_info" object.
void add_tcp_info(telemetry::Record& record, const TcpInfoSummary& info);

// The options' section of that record: the report as JSON, and as text after a " | ".
void add_options(telemetry::Record& record, const ApplyReport& report);

}  // namespace tcptune::shim
