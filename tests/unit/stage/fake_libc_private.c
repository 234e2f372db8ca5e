/* glibc's private __libc_dlopen_mode and __libc_dlsym as glibc 2.0 to 2.33 define them in
   libc.so.6 (elf/dl-libc.c), over this glibc's dlopen and dlsym, noting what they were asked. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <limits.h>
#include <string.h>

/* The project builds with hidden visibility by default; these are what the object exports. */
#define FAKE_EXPORT __attribute__((visibility("default")))

/* NOLINTBEGIN(readability-identifier-naming): glibc's names */
FAKE_EXPORT char fake_libc_private_opened[256];
FAKE_EXPORT int fake_libc_private_mode;
FAKE_EXPORT int fake_libc_private_lookups;

FAKE_EXPORT void* __libc_dlopen_mode(const char* name, int mode) {
  strncpy(fake_libc_private_opened, name, sizeof fake_libc_private_opened - 1);
  fake_libc_private_mode = mode;
  /* glibc's internal __RTLD_DLOPEN, which public dlopen does not take. */
  return dlopen(name, mode & ~INT_MIN);
}

FAKE_EXPORT void* __libc_dlsym(void* map, const char* name) {
  ++fake_libc_private_lookups;
  return dlsym(map, name);
}
/* NOLINTEND(readability-identifier-naming) */
