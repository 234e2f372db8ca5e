/* Loading the tuning core (libtcptune-core.so, beside libtcptune.so) once per process, when the
   first TCP socket appears, and only under glibc. dlopen'ed RTLD_LOCAL, so nothing of it
   reaches the program's global scope; attached once; every route then goes to its entries.
   When it cannot be loaded the process runs untuned and one line on stderr says why (never
   under another libc, where the core is not meant to run). */
#ifndef TCPTUNE_STAGE_CORE_LOADER_H
#define TCPTUNE_STAGE_CORE_LOADER_H

#include <stdbool.h>

#include "core_interface.h"

#pragma GCC visibility push(hidden)
/* The core's entries, loading and attaching it first if needed; NULL when it will not run in
   this process, or while this thread is the one loading it (a hook called from the load goes
   straight to libc). A thread that finds another one loading it waits for it. errno kept. */
const struct tcptune_core_entries* stage_core(void);
/* The core's entries if it is attached already; never loads it. */
const struct tcptune_core_entries* stage_core_if_attached(void);
/* False once it is known that the core will never load here (not glibc, or it failed). */
bool stage_core_possible(void);
/* The program runs on glibc, the only libc the core is built for (asked once). */
bool stage_running_on_glibc(void);
#pragma GCC visibility pop

#endif
