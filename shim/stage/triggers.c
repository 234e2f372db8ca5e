#include "triggers.h"

#include <errno.h>
#include <stdbool.h>
#include <sys/auxv.h>
#include <unistd.h>

#include "core_loader.h"
#include "routes.h"
#include "tcp_detect.h"

/* Each loads the core when the call is about a TCP socket; STAGE_ROUTE then names the core's
   entry, or (the core will not run here) libc's next definition. */

int stage_trigger_socket(int domain, int type, int protocol) {
  if (stage_socket_call_is_tcp(domain, type, protocol) && stage_core() != NULL) {
    return STAGE_ROUTE(socket)(domain, type, protocol);
  }
  return STAGE_NEXT(socket)(domain, type, protocol);
}

int stage_trigger_connect(int fd, __CONST_SOCKADDR_ARG address, socklen_t length) {
  if (stage_fd_is_tcp(fd) && stage_core() != NULL) {
    return STAGE_ROUTE(connect)(fd, address, length);
  }
  return STAGE_NEXT(connect)(fd, address, length);
}

int stage_trigger_listen(int fd, int backlog) {
  if (stage_fd_is_tcp(fd) && stage_core() != NULL) {
    return STAGE_ROUTE(listen)(fd, backlog);
  }
  return STAGE_NEXT(listen)(fd, backlog);
}

int stage_trigger_accept(int fd, __SOCKADDR_ARG address, socklen_t* length) {
  if (stage_fd_is_tcp(fd) && stage_core() != NULL) {
    return STAGE_ROUTE(accept)(fd, address, length);
  }
  return STAGE_NEXT(accept)(fd, address, length);
}

int stage_trigger_accept4(int fd, __SOCKADDR_ARG address, socklen_t* length, int flags) {
  if (stage_fd_is_tcp(fd) && stage_core() != NULL) {
    return STAGE_ROUTE(accept4)(fd, address, length, flags);
  }
  return STAGE_NEXT(accept4)(fd, address, length, flags);
}

int stage_trigger_setsockopt(int fd, int level, int name, const void* value, socklen_t length) {
  if (stage_fd_is_tcp(fd) && stage_core() != NULL) {
    return STAGE_ROUTE(setsockopt)(fd, level, name, value, length);
  }
  return STAGE_NEXT(setsockopt)(fd, level, name, value, length);
}

/* The message is looked at once the kernel has filled it in, and only where the core can run:
   another libc's struct msghdr may differ from glibc's. */
ssize_t stage_trigger_recvmsg(int fd, struct msghdr* message, int flags) {
  const ssize_t result = STAGE_NEXT(recvmsg)(fd, message, flags);
  if (result >= 0 && message->msg_controllen != 0 && stage_core_possible() && stage_rights_carry_tcp(message)) {
    const int saved_errno = errno;
    const struct tcptune_core_entries* core = stage_core();
    if (core != NULL) {
      core->after_rights_received(message);
    }
    errno = saved_errno;
  }
  return result;
}

/* "NAME=" starts `entry`: `prefix` is "NAME=". */
static bool starts_with(const char* entry, const char* prefix) {
  for (; *prefix != '\0'; ++entry, ++prefix) {
    if (*entry != *prefix) {
      return false;
    }
  }
  return true;
}

/* TCPTUNE_STRICT=1 asks for a bad policy to stop the program before main: the core is loaded
   at start to read it. Ignored in secure-execution mode, as the core ignores it. The environment
   is read here as getenv reads it (the first TCPTUNE_STRICT= counts): a program that never
   calls getenv (a shell's /bin/true) then faults in none of libc's pages for it (bench/startup). */
static bool strict_requested(void) {
  static const char prefix[] = "TCPTUNE_STRICT=";
  for (char** entry = environ; entry != NULL && *entry != NULL; ++entry) {
    if (starts_with(*entry, prefix)) {
      const char* value = *entry + sizeof prefix - 1;
      return value[0] == '1' && value[1] == '\0' && getauxval(AT_SECURE) == 0;
    }
  }
  return false;
}

/* At load: a process that starts with a TCP socket (inherited across exec) needs the core now,
   to adopt it; one whose core another library's constructor loaded already, too. Sockets the
   core meets later (made by raw system calls) it adopts at their setup calls, as before. */
__attribute__((constructor)) static void stage_at_load(void) {
  const struct tcptune_core_entries* core = stage_core_if_attached();
  if (core == NULL && (strict_requested() || stage_inherits_tcp_socket())) {
    core = stage_core();
  }
  if (core != NULL) {
    core->adopt_inherited_sockets();
  }
}
