/* Whether a call's arguments, a descriptor or a received message bring a TCP socket: how the
   first stage knows the core is needed. Raw system calls, no allocation; errno kept. */
#ifndef TCPTUNE_STAGE_TCP_DETECT_H
#define TCPTUNE_STAGE_TCP_DETECT_H

#include <stdbool.h>
#include <sys/socket.h>

#pragma GCC visibility push(hidden)
/* socket()'s arguments ask for TCP: AF_INET or AF_INET6, SOCK_STREAM, protocol 0 or TCP. */
bool stage_socket_call_is_tcp(int domain, int type, int protocol);
/* fd is a TCP socket (one getsockopt: SO_PROTOCOL). */
bool stage_fd_is_tcp(int fd);
/* `message`, as recvmsg filled it in (glibc's layout), passed a TCP socket with SCM_RIGHTS. */
bool stage_rights_carry_tcp(const struct msghdr* message);
/* The process holds a TCP socket already, among its first 64 descriptors (inherited across
   exec): one poll() and a getsockopt per open descriptor. */
bool stage_inherits_tcp_socket(void);
#pragma GCC visibility pop

#endif
