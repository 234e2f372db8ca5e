// What no_new_privs takes from a program the supervised one runs: for a trapped execve or
// execveat, whether the file would gain privileges without it (a setuid or setgid bit that
// changes the id, file capabilities for a user other than root), which the kernel ignores under
// no_new_privs. Looked at while the call waits, through /proc/TID (the thread's root, working
// directory or descriptor), only to name the program in one line: a file changed between this
// look and the exec, or one the supervisor may not look at, is not named; the exec goes on
// either way.
#pragma once

#include <optional>
#include <string>

namespace tcptune::supervisor {

class TrappedCall;

struct StrippedExec {
  std::string path;   // as the program named it
  std::string gains;  // e.g. "is setuid (owner uid 0)", "has file capabilities"
};

// For an execve or execveat: what the file would gain, or nullopt for nothing (or not known).
std::optional<StrippedExec> stripped_exec(const TrappedCall& call);

}  // namespace tcptune::supervisor
