#include "executable_inspector.hpp"

#include <elf.h>
#include <sys/stat.h>
#include <sys/xattr.h>

#include <cstring>
#include <fstream>
#include <iterator>

namespace tcptune::cli {

namespace {

struct ElfFacts {
  bool is_elf = false;
  bool has_interpreter = false;
  bool is_go = false;
};

// 64-bit little-endian ELF only, which is what this tool is built for.
ElfFacts inspect_elf(const std::string& path) {
  ElfFacts facts;
  std::ifstream file(path, std::ios::binary);
  const std::string image((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  if (image.size() < sizeof(Elf64_Ehdr) || std::memcmp(image.data(), ELFMAG, SELFMAG) != 0 ||
      image[EI_CLASS] != ELFCLASS64) {
    return facts;
  }
  facts.is_elf = true;
  Elf64_Ehdr header;
  std::memcpy(&header, image.data(), sizeof header);
  for (unsigned i = 0; i < header.e_phnum; ++i) {
    const std::size_t at = header.e_phoff + static_cast<std::size_t>(i) * header.e_phentsize;
    if (at + sizeof(Elf64_Phdr) > image.size()) {
      break;
    }
    Elf64_Phdr program;
    std::memcpy(&program, image.data() + at, sizeof program);
    facts.has_interpreter = facts.has_interpreter || program.p_type == PT_INTERP;
  }
  if (header.e_shstrndx < header.e_shnum) {
    Elf64_Shdr names;
    const std::size_t names_at = header.e_shoff + static_cast<std::size_t>(header.e_shstrndx) * header.e_shentsize;
    if (names_at + sizeof names <= image.size()) {
      std::memcpy(&names, image.data() + names_at, sizeof names);
      for (unsigned i = 0; i < header.e_shnum; ++i) {
        const std::size_t at = header.e_shoff + static_cast<std::size_t>(i) * header.e_shentsize;
        if (at + sizeof(Elf64_Shdr) > image.size()) {
          break;
        }
        Elf64_Shdr section;
        std::memcpy(&section, image.data() + at, sizeof section);
        const std::size_t name_at = names.sh_offset + section.sh_name;
        if (name_at < image.size()) {
          const std::string name(image.c_str() + name_at);
          facts.is_go = facts.is_go || name == ".go.buildinfo" || name == ".note.go.buildid";
        }
      }
    }
  }
  return facts;
}

// "#!/usr/bin/python3 -u" -> "/usr/bin/python3"
std::string script_interpreter(const std::string& path) {
  std::ifstream file(path);
  std::string line;
  std::getline(file, line);
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

std::vector<std::string> preload_obstacles(const std::string& path) {
  std::vector<std::string> reasons;
  struct stat info {};
  if (stat(path.c_str(), &info) != 0) {
    return reasons;
  }
  if ((info.st_mode & (S_ISUID | S_ISGID)) != 0) {
    reasons.push_back(path + " is setuid/setgid: the dynamic loader ignores LD_PRELOAD for it");
  }
  if (getxattr(path.c_str(), "security.capability", nullptr, 0) > 0) {
    reasons.push_back(path + " has file capabilities: the dynamic loader ignores LD_PRELOAD for it");
  }
  const ElfFacts elf = inspect_elf(path);
  if (!elf.is_elf) {
    if (const std::string interpreter = script_interpreter(path); !interpreter.empty() && interpreter != path) {
      for (std::string& reason : preload_obstacles(interpreter)) {
        reasons.push_back("its interpreter " + reason);
      }
    }
    return reasons;
  }
  if (elf.is_go) {
    reasons.push_back(path + " is a Go program: Go makes raw system calls, so the shim never sees its sockets");
  } else if (!elf.has_interpreter) {
    reasons.push_back(path + " is statically linked: there is no dynamic loader to preload the shim");
  }
  return reasons;
}

}  // namespace tcptune::cli
