/* What each hook of the first stage calls when dlsym finds no next definition (a libc without
   that function): the raw system call where there is one, so a hook never recurses into
   itself; a failure with ENOSYS where there is none. The names are hook_table.def's. */
#ifndef TCPTUNE_STAGE_NEXT_FALLBACKS_H
#define TCPTUNE_STAGE_NEXT_FALLBACKS_H

#include "core_interface.h"

#pragma GCC visibility push(hidden)
/* Declared from the table, with the type of the function each stands in for; aliases share
   a fallback of the same type (fcntl64 and fcntl, sendfile64 and sendfile). */
/* NOLINTNEXTLINE(bugprone-macro-parentheses): a declaration */
#define TCPTUNE_HOOK_NEXT(name, fallback) __typeof__(name) fallback;
#include "hook_table.def"
#pragma GCC visibility pop

#endif
