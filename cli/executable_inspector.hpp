// Why a program might not honour LD_PRELOAD: static linking, setuid, file capabilities, Go, or a
// C library other than glibc (musl).
#pragma once

#include <string>
#include <vector>

namespace tcptune::cli {

// What the ELF headers say; all false for anything but a 64-bit ELF file.
struct ElfFacts {
  bool is_elf = false;
  bool has_interpreter = false;  // a PT_INTERP program header: started by the dynamic loader
  std::string interpreter;       // its path ("/lib64/ld-linux-x86-64.so.2"), when it could be read
  bool is_go = false;            // a .go.buildinfo or .note.go.buildid section
};

// Whose dynamic loader a program interpreter is. The shim is built for glibc: preloaded by
// another loader (musl's), its glibc symbols do not resolve and the program dies before main.
enum class LoaderKind {
  glibc,  // ld-linux*.so.*, ld64.so.*, ld.so.1 (glibc's names on every architecture)
  musl,   // ld-musl-ARCH.so.1, also behind a glibc name (Alpine's gcompat links one to it)
  other,  // any other name (uClibc, Bionic...)
};
// By the interpreter's name and, where it is a symbolic link here (under `root`, for a program
// of another root file system: rooted_path.hpp), by the name of what it links to.
LoaderKind classify_loader(const std::string& interpreter, const std::string& root = {});

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
  // statically linked, Go, or another C library's loader: no shim, but supervision reaches it.
  bool bypasses_loader = false;
  // started by a loader that is neither glibc's nor musl's: the shim is not preloaded there (it
  // is harmless under musl, preload.musl_program, and untried elsewhere).
  bool unknown_loader = false;
};
// `path` is a path of this system; `root`, where the program's own root file system is (its
// script interpreter and program interpreter are looked up there): "" for this system.
PreloadObstacles preload_obstacles(const std::string& path, const std::string& root = {});

}  // namespace tcptune::cli
