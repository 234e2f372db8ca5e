// `tcptune run` in supervised mode: the program runs as a child under the seccomp filter, and
// this process tunes its sockets from outside with the shim's tuning core.
#pragma once

#include <string>
#include <vector>

namespace tcptune::cli {

// Runs `resolved` under supervision with the policy the shim would load (TCPTUNE_POLICY, ...)
// and the log it would write (TCPTUNE_LOG, ...). Returns its exit status, 128+N for signal N.
// If supervision cannot start (the program installs a seccomp listener itself, an old kernel),
// the program runs untuned and one line says why.
int run_supervised(const std::string& resolved, std::vector<char*>& argv);

}  // namespace tcptune::cli
