// What is left to do once a trapped call is answered: its records and the watch of its
// connection. The supervisor's answering thread hands it to the records thread (CallRecords),
// so that the program's next call never waits for the last one's records. It holds no
// descriptor: what the records need from the socket is read before the answer (read_socket).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>

#include "option_applier.hpp"
#include "tcptune/config/cidr.hpp"

namespace tcptune::supervisor {

struct FollowUp {
  // not_inspectable, out_of_descriptors: a call left untuned, for a warning; privileges_stripped:
  // an exec under no_new_privs of a file it strips (`note` names it), for a warning. Where
  // pidfd_getfd is refused (sockets handed over): not_handed_over, a connect or listen (`note`)
  // on a TCP socket the supervisor did not create; hand_over_refused, a socket() it could not
  // create as the program's own (`note` says why, `key` names the cause);
  // unreachable_setsockopt, an option (`note`) a rule may keep set on a TCP socket it never had;
  // seen_by_inode, such a socket's inode, for the connection watch.
  enum class Call : std::uint8_t {
    connect,
    listen,
    setsockopt,
    not_inspectable,
    out_of_descriptors,
    privileges_stripped,
    not_handed_over,
    hand_over_refused,
    unreachable_setsockopt,
    seen_by_inode
  };
  Call call = Call::connect;
  std::uint64_t inode = 0;  // the socket's
  pid_t thread = 0;
  pid_t process = 0;  // the thread's, for the records' pid
  int app_fd = -1;
  int rule = -1;
  std::string program;                // as the call found it, and the rule was chosen by
  config::Endpoint local;             // listen: before the call; setsockopt on an accepted socket
  config::Endpoint peer;              // connect: the address given; setsockopt on an accepted socket
  std::uint64_t cookie = 0;           // connect: SO_COOKIE, to find the connection once it is TIME_WAIT
  int family = 0;                     // connect, listen, accepted: the socket's (AF_INET6 if v4-mapped)
  shim::TuningOutcome outcome;        // connect, listen
  bool accepted = false;              // setsockopt: on an accepted socket
  const char* kept_option = nullptr;  // setsockopt: answered unmade, the rule's value kept
  int app_value = 0;                  // setsockopt: the value the program asked for
  std::string note;                   // privileges_stripped: the file and what it would gain; see Call
  std::string key;                    // hand_over_refused: the cause, warned of once per program and cause
};

// What the records need from `socket`, the answering thread's duplicate: its inode (unless
// follow_up.inode has it already) and, with `effective_values`, the options' effective values.
// Read before the call is answered, so that the duplicate is closed by then: one alive after it
// would keep a closed listener's port bound and hold back the FIN of a connection the program
// has closed.
void read_socket(int socket, FollowUp& follow_up, bool effective_values);

}  // namespace tcptune::supervisor
