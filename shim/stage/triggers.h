/* The calls that can bring a process its first TCP socket, as the first stage handles them
   before the core is loaded: each loads the core when it does (socket() for TCP; accept,
   accept4, connect, listen or setsockopt on a TCP socket, the calls where the core adopts a
   socket made by raw system calls; a TCP socket received with SCM_RIGHTS) and then goes on
   through the core's entry, or else straight to libc. Their routes start here. */
#ifndef TCPTUNE_STAGE_TRIGGERS_H
#define TCPTUNE_STAGE_TRIGGERS_H

#include "core_interface.h"

#pragma GCC visibility push(hidden)
int stage_trigger_socket(int domain, int type, int protocol);
int stage_trigger_connect(int fd, __CONST_SOCKADDR_ARG address, socklen_t length);
int stage_trigger_listen(int fd, int backlog);
int stage_trigger_accept(int fd, __SOCKADDR_ARG address, socklen_t* length);
int stage_trigger_accept4(int fd, __SOCKADDR_ARG address, socklen_t* length, int flags);
int stage_trigger_setsockopt(int fd, int level, int name, const void* value, socklen_t length);
ssize_t stage_trigger_recvmsg(int fd, struct msghdr* message, int flags);
#pragma GCC visibility pop

#endif
