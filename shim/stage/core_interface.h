/* What libtcptune.so's first stage (C, shim/stage) and the tuning core (libtcptune-core.so,
   C++) hand each other. The stage dlopens the core privately and calls the one function it
   exports, tcptune_core_attach, with the services below; the core answers with its entry for
   each hook of hook_table.def, which the stage calls from then on instead of libc's next
   definition. Included from C and from C++. */
#ifndef TCPTUNE_CORE_INTERFACE_H
#define TCPTUNE_CORE_INTERFACE_H

#include <aio.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "fortified_declarations.h"

#ifdef __cplusplus
#include "next_symbols.hpp"
/* libc's prototype without glibc's noexcept, as the core's entries are declared. */
#define TCPTUNE_CORE_ENTRY_POINTER(name) ::tcptune::shim::LibcFunction<decltype(::name)>*
#else
#define TCPTUNE_CORE_ENTRY_POINTER(name) __typeof__(name)*
#endif

/* Both sides must be built from the same tree: a core of another version is not attached. */
#define TCPTUNE_CORE_INTERFACE_VERSION 2
#define TCPTUNE_CORE_ATTACH_SYMBOL "tcptune_core_attach"

/* NOLINTBEGIN(readability-identifier-naming) */
struct tcptune_stage_services {
  unsigned int interface_version;
  /* libc's next definition of `name` after libtcptune.so (dlsym(RTLD_NEXT) in the stage), or
     NULL; the core resolves every next definition through it. */
  void* (*next_symbol)(const char* name);
  /* The program's handlers installed before the core was loaded run behind the stage's
     trampoline: this puts the program's own handler and flags in place of it. */
  void (*app_view_of_handler)(int signal_number, struct sigaction* installed);
  /* The vfork() calls through the stage's hook whose parent has not returned (vfork_hook.h):
     while it is 0, no thread of this process is a vfork child. */
  const int* vforks_in_flight;
};

#ifdef __cplusplus
/* glibc's attributes (access, warn_unused_result) are not part of the types. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wignored-attributes"
#endif
struct tcptune_core_entries {
  /* One per TCPTUNE_HOOK_NEXT line, of libc's own type, in the table's order. */
  /* NOLINTNEXTLINE(bugprone-macro-parentheses): a declaration */
#define TCPTUNE_HOOK_NEXT(name, fallback) TCPTUNE_CORE_ENTRY_POINTER(name) name;
#include "hook_table.def"
  /* Descriptors received with SCM_RIGHTS in `message` (filled in by the kernel) before the core
     was loaded, as its recvmsg entry would have seen them. */
  void (*after_rights_received)(const struct msghdr* message);
  /* Sockets inherited across exec, found at start-up: classified and tuned (the stage calls it
     from its constructor, as the single library's constructor did). */
  void (*adopt_inherited_sockets)(void);
};
#ifdef __cplusplus
#pragma GCC diagnostic pop
#endif

/* NULL when the core will not run here (another interface version). */
typedef const struct tcptune_core_entries* tcptune_core_attach_function(const struct tcptune_stage_services* services);
/* NOLINTEND(readability-identifier-naming) */

#endif
