/* The dynamic loader's dlsym, dlopen, dladdr and dlerror for the first stage, which links
   against none of them: libdl.so.2 is not among its needed libraries (every process would map
   it for nothing on glibc 2.34 and later, where it is empty: bench/startup), and a versioned
   reference to them would name libc.so.6, where glibc before 2.30 looks for them and, before
   2.34, does not find them: the program would stop before main ("symbol dlsym, version
   GLIBC_2.2.5 not defined in file libc.so.6 with link time reference"). They are found, the
   first time the stage needs one, in the symbol tables of the objects loaded
   (loaded_symbols.h), as the loader would bind an unversioned reference:
   - glibc 2.34 and later: in libc.so.6;
   - glibc before 2.34: in libdl.so.2 when the program or a library of it loaded it; otherwise
     the stage loads it, as glibc loads its own helpers: with libc's private __libc_dlopen_mode
     and __libc_dlsym (GLIBC_PRIVATE from 2.0 to 2.33), found in libc's symbol table;
   - musl: in its libc, which is also its loader.
   dlsym(RTLD_NEXT) judges the caller by its return address, which is the stage's, as when it
   called dlsym directly. */
#ifndef TCPTUNE_STAGE_DL_FUNCTIONS_H
#define TCPTUNE_STAGE_DL_FUNCTIONS_H

#include <dlfcn.h>
#include <stdbool.h>

#pragma GCC visibility push(hidden)
/* NOLINTBEGIN(readability-identifier-naming) */
struct stage_dl_functions {
  void* (*dlsym)(void* handle, const char* name);
  void* (*dlopen)(const char* path, int mode);
  int (*dladdr)(const void* address, Dl_info* info);
  char* (*dlerror)(void);
};
/* NOLINTEND(readability-identifier-naming) */

/* The four functions, found once per process; NULL where they cannot be had: found nowhere, or
   not yet, while this thread is the one finding them (a hook called from inside, a signal
   handler included), or after waiting two seconds for another thread. Not async-signal-safe
   the first time (the loader's lock, a load); errno kept. */
const struct stage_dl_functions* stage_dl(void);

/* The four functions from objects already loaded; false, and `functions` unchanged, where one
   of them is defined by none. */
bool stage_dl_find_loaded(struct stage_dl_functions* functions);
/* What stage_dl does where no loaded object has them (glibc before 2.34 without libdl.so.2):
   libdl.so.2 loaded with libc's __libc_dlopen_mode and its four functions taken with
   __libc_dlsym. False, and `functions` unchanged, where libc has neither or libdl.so.2 lacks
   one. Exposed for tests, which cannot run a glibc that old. */
bool stage_dl_load_privately(struct stage_dl_functions* functions);
#pragma GCC visibility pop

#endif
