// `tcptune run` in supervised mode: the program runs as a child under the seccomp filter, and
// this process tunes its sockets from outside with the shim's tuning core.
#pragma once

#include <string>
#include <vector>

#include "tcptune/config/policy_loader.hpp"

namespace tcptune::cli {

// Runs `resolved` under supervision with `loaded`, the policy of the run (an error: untuned, and
// one line says so), and the log the shim would write (TCPTUNE_LOG, ...). Returns its wait status.
// If supervision cannot start (the program installs a seccomp listener itself, an old kernel),
// the program runs untuned and one line says why.
int run_supervised(const std::string& resolved, std::vector<char*>& argv, const config::LoadResult& loaded);

}  // namespace tcptune::cli
