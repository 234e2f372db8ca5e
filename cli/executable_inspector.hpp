// Why a program might not honour LD_PRELOAD: static linking, setuid, file capabilities, Go.
#pragma once

#include <string>
#include <vector>

namespace tcptune::cli {

// Plain-words reasons the shim will not load into (or not see the sockets of) `path`.
std::vector<std::string> preload_obstacles(const std::string& path);

}  // namespace tcptune::cli
