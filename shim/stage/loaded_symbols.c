#include "loaded_symbols.h"

#include <elf.h>
#include <link.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/* A version index with this bit set names a hidden version (name@VERSION, not name@@VERSION). */
enum { kHiddenVersion = 0x8000 };

/* What one object's dynamic section points at. */
struct symbol_tables {
  const ElfW(Sym) * symbols;
  const char* strings;
  size_t strings_size;
  const uint32_t* gnu_hash;
  const uint32_t* sysv_hash;
  const ElfW(Versym) * versions;
};

struct search {
  const char* name;
  uint32_t gnu_hash;
  uint32_t sysv_hash;
  void* found;
};

static uint32_t gnu_hash_of(const char* name) {
  uint32_t hash = 5381;
  for (const unsigned char* c = (const unsigned char*)name; *c != '\0'; ++c) {
    hash = hash * 33 + *c;
  }
  return hash;
}

static uint32_t sysv_hash_of(const char* name) {
  uint32_t hash = 0;
  for (const unsigned char* c = (const unsigned char*)name; *c != '\0'; ++c) {
    hash = (hash << 4) + *c;
    const uint32_t high = hash & 0xf0000000U;
    hash ^= high >> 24;
    hash &= ~high;
  }
  return hash;
}

/* glibc's loader rewrites the dynamic section's addresses as absolute ones (where it is
   writable); musl's and the vDSO's keep them relative to the load address. A relative one is
   below the load address. */
static const void* dynamic_address(const struct dl_phdr_info* object, ElfW(Addr) value) {
  /* NOLINTNEXTLINE(performance-no-int-to-ptr): an address the dynamic section holds */
  return (const void*)(value < object->dlpi_addr ? object->dlpi_addr + value : value);
}

static const ElfW(Sym) * matching(const struct symbol_tables* tables, uint32_t index, const char* name) {
  const ElfW(Sym)* symbol = &tables->symbols[index];
  if (symbol->st_shndx == SHN_UNDEF || /* ELF32's is the same */ ELF64_ST_TYPE(symbol->st_info) != STT_FUNC ||
      symbol->st_value == 0 || symbol->st_name >= tables->strings_size) {
    return NULL;
  }
  if (tables->versions != NULL && (tables->versions[index] & kHiddenVersion) != 0) {
    return NULL;
  }
  return strcmp(tables->strings + symbol->st_name, name) == 0 ? symbol : NULL;
}

/* DT_GNU_HASH: nbuckets, symoffset, bloom_size, bloom_shift, the Bloom filter (words of the
   address size), the buckets, then one chain word per symbol from symoffset on, whose low bit
   ends a chain. The filter is only a shortcut, and is not read. */
static const ElfW(Sym) * gnu_lookup(const struct symbol_tables* tables, const struct search* search) {
  const uint32_t* header = tables->gnu_hash;
  const uint32_t buckets_count = header[0];
  const uint32_t first_hashed = header[1];
  const uint32_t bloom_words = header[2];
  if (buckets_count == 0) {
    return NULL;
  }
  const uint32_t* buckets = (const uint32_t*)((const ElfW(Addr)*)(header + 4) + bloom_words);
  const uint32_t* chain = buckets + buckets_count;
  uint32_t index = buckets[search->gnu_hash % buckets_count];
  if (index < first_hashed) {
    return NULL;
  }
  for (;; ++index) {
    const uint32_t entry = chain[index - first_hashed];
    if ((entry | 1U) == (search->gnu_hash | 1U)) {
      const ElfW(Sym)* symbol = matching(tables, index, search->name);
      if (symbol != NULL) {
        return symbol;
      }
    }
    if ((entry & 1U) != 0) {
      return NULL;
    }
  }
}

/* DT_HASH: nbucket, nchain, the buckets, the chains (32-bit words on x86-64). */
static const ElfW(Sym) * sysv_lookup(const struct symbol_tables* tables, const struct search* search) {
  const uint32_t* header = tables->sysv_hash;
  const uint32_t buckets_count = header[0];
  const uint32_t chain_count = header[1];
  if (buckets_count == 0) {
    return NULL;
  }
  const uint32_t* buckets = header + 2;
  const uint32_t* chain = buckets + buckets_count;
  for (uint32_t index = buckets[search->sysv_hash % buckets_count]; index != STN_UNDEF && index < chain_count;
       index = chain[index]) {
    const ElfW(Sym)* symbol = matching(tables, index, search->name);
    if (symbol != NULL) {
      return symbol;
    }
  }
  return NULL;
}

static int search_object(struct dl_phdr_info* object, size_t size, void* data) {
  struct search* search = data;
  if (size < offsetof(struct dl_phdr_info, dlpi_phnum) + sizeof object->dlpi_phnum) {
    return 0;
  }
  const ElfW(Dyn)* dynamic = NULL;
  for (ElfW(Half) i = 0; i < object->dlpi_phnum; ++i) {
    if (object->dlpi_phdr[i].p_type == PT_DYNAMIC) {
      /* NOLINTNEXTLINE(performance-no-int-to-ptr): the object's load address plus an offset */
      dynamic = (const ElfW(Dyn)*)(object->dlpi_addr + object->dlpi_phdr[i].p_vaddr);
    }
  }
  if (dynamic == NULL) {
    return 0;
  }
  struct symbol_tables tables = {NULL, NULL, 0, NULL, NULL, NULL};
  for (const ElfW(Dyn)* entry = dynamic; entry->d_tag != DT_NULL; ++entry) {
    switch (entry->d_tag) {
      case DT_SYMTAB: tables.symbols = dynamic_address(object, entry->d_un.d_ptr); break;
      case DT_STRTAB: tables.strings = dynamic_address(object, entry->d_un.d_ptr); break;
      case DT_STRSZ: tables.strings_size = entry->d_un.d_val; break;
      case DT_GNU_HASH: tables.gnu_hash = dynamic_address(object, entry->d_un.d_ptr); break;
      case DT_HASH: tables.sysv_hash = dynamic_address(object, entry->d_un.d_ptr); break;
      case DT_VERSYM: tables.versions = dynamic_address(object, entry->d_un.d_ptr); break;
      default: break;
    }
  }
  if (tables.symbols == NULL || tables.strings == NULL) {
    return 0;
  }
  const ElfW(Sym)* symbol = NULL;
  if (tables.gnu_hash != NULL) {
    symbol = gnu_lookup(&tables, search);
  } else if (tables.sysv_hash != NULL) {
    symbol = sysv_lookup(&tables, search);
  }
  if (symbol == NULL) {
    return 0;
  }
  /* NOLINTNEXTLINE(performance-no-int-to-ptr): the object's load address plus the symbol's value */
  search->found = (void*)(object->dlpi_addr + symbol->st_value);
  return 1;
}

/* Walks in flight, and the process whose threads make them. A child forked while another
   thread of its parent walked may inherit the loader's lock held (glibc 2.36 does not reset
   it in the child): its one thread would wait for it forever, so it does not walk. */
static int g_walks;
static long g_walking_process;

void* stage_loaded_function(const char* name) {
  const long self = syscall(SYS_getpid);
  if (__atomic_load_n(&g_walks, __ATOMIC_ACQUIRE) > 0 &&
      __atomic_load_n(&g_walking_process, __ATOMIC_ACQUIRE) != self) {
    return NULL;
  }
  __atomic_store_n(&g_walking_process, self, __ATOMIC_RELEASE);
  __atomic_add_fetch(&g_walks, 1, __ATOMIC_ACQ_REL);
  struct search search = {name, gnu_hash_of(name), sysv_hash_of(name), NULL};
  (void)dl_iterate_phdr(search_object, &search);
  __atomic_sub_fetch(&g_walks, 1, __ATOMIC_ACQ_REL);
  return search.found;
}
