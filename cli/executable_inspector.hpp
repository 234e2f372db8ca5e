// Why a program might not honour LD_PRELOAD: static linking, setuid, file capabilities, Go.
#pragma once

#include <string>
#include <vector>

namespace tcptune::cli {

// What the ELF headers say; all false for anything but a 64-bit ELF file.
struct ElfFacts {
  bool is_elf = false;
  bool has_interpreter = false;  // a PT_INTERP program header: started by the dynamic loader
  bool is_go = false;            // a .go.buildinfo or .note.go.buildid section
};

// Reads the ELF header, the program headers, the section headers and their names only.
ElfFacts inspect_elf(const std::string& path);

// Why the shim will not load into (or not see the sockets of) `path`.
struct PreloadObstacles {
  std::vector<std::string> reasons;  // plain words, one per obstacle
  // setuid, setgid or file capabilities (its own or its script interpreter's) that give this
  // user privileges it lacks (secure execution: a setuid file of another owner, capabilities for
  // a user other than root): the loader ignores LD_PRELOAD, and supervision keeps the privileges
  // only with CAP_SYS_ADMIN (without, it needs no_new_privs, which strips them).
  bool privileged = false;
  // statically linked or Go: no shim, but supervision reaches it.
  bool bypasses_loader = false;
};
PreloadObstacles preload_obstacles(const std::string& path);

}  // namespace tcptune::cli
