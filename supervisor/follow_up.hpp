// What is left to do once a trapped call is answered: its records and the watch of its
// connection. The supervisor's answering thread hands it to the records thread (CallRecords),
// so that the program's next call never waits for the last one's records.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>

#include "option_applier.hpp"
#include "owned_fd.hpp"
#include "tcptune/config/cidr.hpp"

namespace tcptune::supervisor {

struct FollowUp {
  enum class Call : std::uint8_t { connect, listen, setsockopt, not_inspectable };
  Call call = Call::connect;
  OwnedFd socket;           // the duplicate the call was tuned on (-1 for not_inspectable), until read
  std::uint64_t inode = 0;  // the socket's, read from the duplicate
  pid_t thread = 0;
  pid_t process = 0;  // the thread's, for the records' pid
  int app_fd = -1;
  int rule = -1;
  // The program's name as the answering thread knows it: read again for the record (an exec
  // since shows), and used if the program has gone by then.
  std::string program;
  config::Endpoint local;             // listen: the listener's; connect: read afterwards
  shim::TuningOutcome outcome;        // connect, listen: effective values not read yet
  bool accepted = false;              // setsockopt: on an accepted socket
  const char* kept_option = nullptr;  // setsockopt: answered unmade, the rule's value kept
  int app_value = 0;                  // setsockopt: the value the program asked for
};

// What the records need from the duplicate (inode; with `effective_values`, the options read
// back and a client's local endpoint), then the duplicate closed. The records thread does it
// for a whole batch before it formats any record; the answering thread does it itself when
// many follow-ups wait, so that few duplicates are ever held.
void read_socket(FollowUp& follow_up, bool effective_values);

}  // namespace tcptune::supervisor
