/* stat, fstat and fstat64 became functions of their own in glibc 2.33; before, <sys/stat.h>
 * made them calls of __xstat. The system calls themselves: on x86-64 the kernel's struct stat
 * is glibc's, and syscall() returns -1 with errno set, as the functions do. */
#define _GNU_SOURCE
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

__attribute__((visibility("hidden"))) int stat(const char* restrict path, struct stat* restrict buffer) {
  return (int)syscall(SYS_stat, path, buffer);
}

__attribute__((visibility("hidden"))) int fstat(int fd, struct stat* buffer) {
  return (int)syscall(SYS_fstat, fd, buffer);
}

__attribute__((visibility("hidden"))) int fstat64(int fd, struct stat64* buffer) {
  return (int)syscall(SYS_fstat, fd, buffer);
}
