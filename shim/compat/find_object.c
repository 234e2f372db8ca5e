/* glibc 2.35's _dl_find_object, which GCC 12's unwinder calls for every frame of a thrown
 * exception, without falling back when it fails: here over dl_iterate_phdr (glibc 2.2.5). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <stddef.h>
#include <stdint.h>

struct object_search {
  uintptr_t address;
  struct dl_find_object* result;
};

/* The object whose PT_LOAD segments hold the address: its mapped range and PT_GNU_EH_FRAME. */
static int find_containing_object(struct dl_phdr_info* info, size_t size, void* data) {
  (void)size;
  struct object_search* search = data;
  uintptr_t start = UINTPTR_MAX;
  uintptr_t end = 0;
  int contains = 0;
  void* eh_frame = NULL;
  for (ElfW(Half) i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)* segment = &info->dlpi_phdr[i];
    const uintptr_t segment_start = info->dlpi_addr + segment->p_vaddr;
    if (segment->p_type == PT_LOAD) {
      const uintptr_t segment_end = segment_start + segment->p_memsz;
      contains |= search->address >= segment_start && search->address < segment_end;
      start = segment_start < start ? segment_start : start;
      end = segment_end > end ? segment_end : end;
    } else if (segment->p_type == PT_GNU_EH_FRAME) {
      eh_frame = (void*)segment_start;  // NOLINT(performance-no-int-to-ptr)
    }
  }
  if (!contains) {
    return 0;
  }
  /* dl_iterate_phdr does not give the link map (NULL); the unwinder reads dlfo_eh_frame. */
  const struct dl_find_object found = {
      .dlfo_map_start = (void*)start,  // NOLINT(performance-no-int-to-ptr): addresses of the program headers
      .dlfo_map_end = (void*)end,      // NOLINT(performance-no-int-to-ptr)
      .dlfo_eh_frame = eh_frame,
  };
  *search->result = found;
  return 1;
}

__attribute__((visibility("hidden"))) int _dl_find_object(void* address, struct dl_find_object* result) {
  struct object_search search = {(uintptr_t)address, result};
  return dl_iterate_phdr(find_containing_object, &search) != 0 ? 0 : -1;
}
