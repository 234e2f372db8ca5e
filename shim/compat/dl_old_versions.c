/* The dl functions that glibc 2.34 moved from libdl into libc under GLIBC_2.34, bound to their
 * versions of glibc 2.2.5. dlopen and dlsym judge the calling object by the return address,
 * which stays in this library through the wrapper. */
#define _GNU_SOURCE
#include <dlfcn.h>

#include "old_version.h"

/* The names are the linker's (--wrap) and glibc's. */
/* NOLINTBEGIN(readability-identifier-naming) */
TCPTUNE_OLD_VERSION(dlopen, "GLIBC_2.2.5");
TCPTUNE_OLD_VERSION(dlsym, "GLIBC_2.2.5");
TCPTUNE_OLD_VERSION(dladdr, "GLIBC_2.2.5");

TCPTUNE_WRAPPER void* __wrap_dlopen(const char* file, int mode) {
  return tcptune_old_dlopen(file, mode);
}

TCPTUNE_WRAPPER void* __wrap_dlsym(void* handle, const char* name) {
  return tcptune_old_dlsym(handle, name);
}

TCPTUNE_WRAPPER int __wrap_dladdr(const void* address, Dl_info* info) {
  return tcptune_old_dladdr(address, info);
}
/* NOLINTEND(readability-identifier-naming) */
