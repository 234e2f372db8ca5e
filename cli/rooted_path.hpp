// A path as a program on another root file system sees it (`tcptune enable --root DIR`, an
// image being prepared): symbolic links are followed inside that root, as systemd does for its
// unit files (chase_symlinks with a root), so /usr/bin/x -> /opt/x/bin/x stays under DIR.
#pragma once

#include <string>

namespace tcptune::cli {

// `path` (absolute) with every symbolic link followed inside `root` ("" or "/": this system),
// returned as a path of this system (under `root`). A component that does not exist ends the
// following: the rest is appended as it is. At most 40 links, as the kernel allows.
std::string resolve_in_root(const std::string& root, const std::string& path);

// `path` (absolute) under `root`, without following anything.
std::string under_root(const std::string& root, const std::string& path);

}  // namespace tcptune::cli
