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

// Plain-words reasons the shim will not load into (or not see the sockets of) `path`.
std::vector<std::string> preload_obstacles(const std::string& path);

}  // namespace tcptune::cli
