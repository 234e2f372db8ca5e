#include "executable_inspector.hpp"

#include <elf.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <system_error>

#include "rooted_path.hpp"

namespace tcptune::cli {

namespace {

// Section names longer than this are no Go section; the table is read only up to it.
constexpr std::size_t kMaxSectionNames = 1 << 20;
// The kernel refuses a PT_INTERP longer than PATH_MAX.
constexpr std::uint64_t kMaxInterpreter = 4096;

class ElfFile {
 public:
  explicit ElfFile(const std::string& path) : fd_(::open(path.c_str(), O_RDONLY | O_CLOEXEC)) {}
  ~ElfFile() {
    if (fd_ >= 0) {
      (void)::close(fd_);
    }
  }
  ElfFile(const ElfFile&) = delete;
  ElfFile& operator=(const ElfFile&) = delete;

  // `size` bytes at `offset`, or false if the file is shorter (or unreadable).
  bool read_at(std::uint64_t offset, void* out, std::size_t size) const {
    auto* bytes = static_cast<char*>(out);
    std::size_t done = 0;
    while (done < size) {
      const ssize_t got = ::pread(fd_, bytes + done, size - done, static_cast<off_t>(offset + done));
      if (got < 0 && errno == EINTR) {
        continue;
      }
      if (got <= 0) {
        return false;
      }
      done += static_cast<std::size_t>(got);
    }
    return true;
  }
  [[nodiscard]] bool is_open() const { return fd_ >= 0; }

 private:
  int fd_;
};

}  // namespace

// 64-bit ELF only, which is what this tool is built for.
ElfFacts inspect_elf(const std::string& path) {
  ElfFacts facts;
  const ElfFile file(path);
  Elf64_Ehdr header{};
  if (!file.is_open() || !file.read_at(0, &header, sizeof header) ||
      std::memcmp(header.e_ident, ELFMAG, SELFMAG) != 0 || header.e_ident[EI_CLASS] != ELFCLASS64) {
    return facts;
  }
  facts.is_elf = true;
  for (unsigned i = 0; i < header.e_phnum && !facts.has_interpreter; ++i) {
    Elf64_Phdr program{};
    if (!file.read_at(header.e_phoff + std::uint64_t{i} * header.e_phentsize, &program, sizeof program)) {
      break;
    }
    facts.has_interpreter = program.p_type == PT_INTERP;
    if (facts.has_interpreter && program.p_filesz <= kMaxInterpreter) {
      std::string text(program.p_filesz, '\0');
      if (file.read_at(program.p_offset, text.data(), text.size())) {
        facts.interpreter = text.substr(0, text.find('\0'));
      }
    }
  }
  Elf64_Shdr names{};
  if (header.e_shstrndx >= header.e_shnum ||
      !file.read_at(header.e_shoff + std::uint64_t{header.e_shstrndx} * header.e_shentsize, &names, sizeof names)) {
    return facts;
  }
  std::string table(std::min<std::uint64_t>(names.sh_size, kMaxSectionNames), '\0');
  if (!file.read_at(names.sh_offset, table.data(), table.size())) {
    return facts;
  }
  for (unsigned i = 0; i < header.e_shnum && !facts.is_go; ++i) {
    Elf64_Shdr section{};
    if (!file.read_at(header.e_shoff + std::uint64_t{i} * header.e_shentsize, &section, sizeof section)) {
      break;
    }
    if (section.sh_name < table.size()) {
      const std::string name(table.c_str() + section.sh_name);
      facts.is_go = name == ".go.buildinfo" || name == ".note.go.buildid";
    }
  }
  return facts;
}

namespace {

bool is_glibc_loader_name(const std::string& name) {
  return name.starts_with("ld-linux") || name.starts_with("ld64.so.") || name == "ld.so.1";
}

}  // namespace

LoaderKind classify_loader(const std::string& interpreter, const std::string& root) {
  const std::string name = std::filesystem::path(interpreter).filename().string();
  std::error_code error;
  const std::string target =
      std::filesystem::canonical(root.empty() ? interpreter : resolve_in_root(root, interpreter), error)
          .filename()
          .string();
  if (name.starts_with("ld-musl-") || (!error && target.starts_with("ld-musl-"))) {
    return LoaderKind::musl;
  }
  return is_glibc_loader_name(name) ? LoaderKind::glibc : LoaderKind::other;
}

namespace {

// The most of a "#!" line the kernel reads (BINPRM_BUF_SIZE).
constexpr std::size_t kMaxShebangLine = 256;

// "#!/usr/bin/python3 -u" -> "/usr/bin/python3"
std::string script_interpreter(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  std::string line(kMaxShebangLine, '\0');
  file.read(line.data(), static_cast<std::streamsize>(line.size()));
  line.resize(static_cast<std::size_t>(file.gcount()));
  line = line.substr(0, line.find('\n'));
  if (line.rfind("#!", 0) != 0) {
    return {};
  }
  std::size_t start = line.find_first_not_of(' ', 2);
  if (start == std::string::npos) {
    return {};
  }
  return line.substr(start, line.find(' ', start) - start);
}

}  // namespace

PreloadObstacles preload_obstacles(const std::string& path, const std::string& root) {
  PreloadObstacles obstacles;
  std::vector<std::string>& reasons = obstacles.reasons;
  struct stat info {};
  if (stat(path.c_str(), &info) != 0) {
    return obstacles;
  }
  // Only what raises privileges for this user (the kernel's secure execution, AT_SECURE): a
  // setuid file owned by the real uid, or file capabilities run by root, gain nothing, and the
  // loader honours LD_PRELOAD for them.
  const bool setuid = (info.st_mode & S_ISUID) != 0 && info.st_uid != getuid();
  const bool setgid = (info.st_mode & (S_ISGID | S_IXGRP)) == (S_ISGID | S_IXGRP) && info.st_gid != getgid();
  if (setuid || setgid) {
    reasons.push_back(path + " is setuid/setgid: the dynamic loader ignores LD_PRELOAD for it");
    obstacles.privileged = true;
  }
  if (getuid() != 0 && getxattr(path.c_str(), "security.capability", nullptr, 0) > 0) {
    reasons.push_back(path + " has file capabilities: the dynamic loader ignores LD_PRELOAD for it");
    obstacles.privileged = true;
  }
  const ElfFacts elf = inspect_elf(path);
  if (!elf.is_elf) {
    const std::string interpreter = script_interpreter(path);
    const std::string located = root.empty() || interpreter.empty() ? interpreter : resolve_in_root(root, interpreter);
    if (!located.empty() && located != path) {
      PreloadObstacles of_interpreter = preload_obstacles(located, root);
      for (std::string& reason : of_interpreter.reasons) {
        reasons.push_back("its interpreter " + reason);
      }
      obstacles.privileged = obstacles.privileged || of_interpreter.privileged;
      obstacles.bypasses_loader = of_interpreter.bypasses_loader;
      obstacles.unknown_loader = of_interpreter.unknown_loader;
    }
    return obstacles;
  }
  if (elf.is_go) {
    reasons.push_back(path + " is a Go program: Go makes raw system calls, so the shim never sees its sockets");
    obstacles.bypasses_loader = true;
  } else if (!elf.has_interpreter) {
    reasons.push_back(path + " is statically linked: there is no dynamic loader to preload the shim");
    obstacles.bypasses_loader = true;
  } else if (const LoaderKind loader = classify_loader(elf.interpreter, root); loader != LoaderKind::glibc) {
    // Under musl the shim's first stage loads and forwards every call, untuned: its core runs
    // under glibc only. An unreadable PT_INTERP (empty) counts as another loader, where the shim
    // is not risked.
    const std::string interpreter = elf.interpreter.empty() ? "unreadable" : elf.interpreter;
    if (loader == LoaderKind::musl) {
      reasons.push_back(path + " is linked against musl (program interpreter " + interpreter +
                        "): the shim tunes programs linked against glibc only");
    } else {
      reasons.push_back(path + " is not linked against glibc (program interpreter " + interpreter +
                        "): the shim, built for glibc, might stop it before main");
      obstacles.unknown_loader = true;
    }
    obstacles.bypasses_loader = true;
  }
  return obstacles;
}

}  // namespace tcptune::cli
