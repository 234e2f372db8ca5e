// A descriptor of the supervised program looked at through /proc/TID/fd/N, without taking it
// (pidfd_getfd may be refused): which socket it names, by inode (as fstat's st_ino on any
// descriptor of it), and whether that socket is TCP (sockfs's "system.sockprotoname"
// attribute). Both follow the same ptrace read check as the program's other /proc files.
#pragma once

#include <sys/types.h>

#include <cstdint>

namespace tcptune::supervisor {

// The socket's inode; 0 when `fd` is not a socket, not open, or the thread is gone.
std::uint64_t program_socket_inode(pid_t thread, int fd) noexcept;

// Whether `fd` names a TCP socket (IPv4 or IPv6), whatever its state.
bool program_fd_is_tcp(pid_t thread, int fd) noexcept;

}  // namespace tcptune::supervisor
