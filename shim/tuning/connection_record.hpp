// The record of a socket the policy was applied to (conn_open, conn_rtt_auto), the same for the
// preloaded shim and the supervisor: which rule, at which moment, between which endpoints. The
// caller adds what only it knows (a callsite) and then the options.
#pragma once

#include "option_applier.hpp"
#include "record.hpp"
#include "socket_role.hpp"
#include "tcptune/config/policy.hpp"

namespace tcptune::shim {

// `fd` is the socket asked for its endpoints; `app_fd` its number in the program (the same in the
// shim; the supervisor asks a duplicate).
telemetry::Record connection_record(const char* event, int fd, int app_fd, SocketRole role,
                                    const config::Policy& policy, int rule, ApplyPhase phase);

// The options' section of that record: the report as JSON, and as text after a " | ".
void add_options(telemetry::Record& record, const ApplyReport& report);

}  // namespace tcptune::shim
