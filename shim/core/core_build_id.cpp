#include "core_build_id.hpp"

#include <elf.h>
#include <link.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <utility>

namespace tcptune::shim {

namespace {

struct Search {
  std::uintptr_t address;  // inside the object whose id is wanted
  std::string id;
};

bool contains(const dl_phdr_info& object, std::uintptr_t address) {
  for (ElfW(Half) i = 0; i < object.dlpi_phnum; ++i) {
    const ElfW(Phdr)& header = object.dlpi_phdr[i];
    const std::uintptr_t start = object.dlpi_addr + header.p_vaddr;
    if (header.p_type == PT_LOAD && address >= start && address - start < header.p_memsz) {
      return true;
    }
  }
  return false;
}

// The NT_GNU_BUILD_ID note among the object's PT_NOTE segments (notes are 4-byte aligned in
// the segments the linker writes for it).
std::string build_id_of(const dl_phdr_info& object) {
  for (ElfW(Half) i = 0; i < object.dlpi_phnum; ++i) {
    const ElfW(Phdr)& header = object.dlpi_phdr[i];
    if (header.p_type != PT_NOTE || header.p_align > 4) {
      continue;
    }
    // The loader gives the segment as an address: there is no pointer to derive it from.
    const auto* at = reinterpret_cast<const unsigned char*>(  // NOLINT(performance-no-int-to-ptr)
        object.dlpi_addr + header.p_vaddr);
    const unsigned char* end = at + header.p_memsz;
    while (static_cast<std::size_t>(end - at) >= sizeof(ElfW(Nhdr))) {
      ElfW(Nhdr) note;
      std::memcpy(&note, at, sizeof note);
      const std::size_t name_size = (note.n_namesz + 3U) & ~std::size_t{3};
      const std::size_t desc_size = (note.n_descsz + 3U) & ~std::size_t{3};
      const unsigned char* name = at + sizeof note;
      if (static_cast<std::size_t>(end - name) < name_size + desc_size) {
        break;
      }
      if (note.n_type == NT_GNU_BUILD_ID && note.n_namesz == 4 && std::memcmp(name, "GNU", 4) == 0) {
        return std::string(reinterpret_cast<const char*>(name + name_size), note.n_descsz);
      }
      at = name + name_size + desc_size;
    }
  }
  return {};
}

int visit(dl_phdr_info* object, std::size_t /*size*/, void* data) {
  auto* search = static_cast<Search*>(data);
  if (!contains(*object, search->address)) {
    return 0;
  }
  search->id = build_id_of(*object);
  return 1;
}

}  // namespace

std::string_view core_build_id() {
  // Never freed: the id is wanted for the life of the process, and a static std::string's
  // destructor would run at exit while hooks may still read it.
  static const std::string* id = [] {
    Search search{reinterpret_cast<std::uintptr_t>(&core_build_id), {}};
    dl_iterate_phdr(visit, &search);
    return new std::string(std::move(search.id));
  }();
  return *id;
}

}  // namespace tcptune::shim
