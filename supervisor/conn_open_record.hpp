// The supervisor's conn_open record: the shim's (connection_record.hpp), marked supervised,
// with the socket's inode and its options. A listener's is written once its listen is answered;
// a client's once a dump shows its connection with both ends (connection_watch.hpp).
#pragma once

#include <cstdint>

#include "connection_record.hpp"
#include "option_applier.hpp"
#include "record.hpp"
#include "socket_role.hpp"
#include "tcptune/config/cidr.hpp"
#include "tcptune/config/policy.hpp"

namespace tcptune::supervisor {

inline telemetry::Record supervised_conn_open(int app_fd, shim::SocketRole role, const config::Policy& policy, int rule,
                                              shim::ApplyPhase phase, const config::Endpoint& local,
                                              const config::Endpoint& peer, std::uint64_t inode,
                                              const shim::ApplyReport& report) {
  // An address without a port is none yet (a client's before its connect).
  telemetry::Record record =
      shim::connection_record("conn_open", app_fd, role, policy, rule, phase,
                              local.port != 0 ? local : config::Endpoint{}, peer.port != 0 ? peer : config::Endpoint{});
  record.add("supervised", true);
  if (inode != 0) {
    record.add("inode", inode);
  }
  shim::add_options(record, report);
  return record;
}

}  // namespace tcptune::supervisor
