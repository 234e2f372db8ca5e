/* glibc 2.25's getentropy and 2.36's arc4random, which the static C++ runtime references
 * (std::random_device), over the getrandom system call (Linux 3.17) as glibc does. System calls
 * throughout: the library's own read and close hooks are not to be reached from here. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

__attribute__((visibility("hidden"))) int getentropy(void* buffer, size_t length) {
  if (length > 256) {
    errno = EIO;
    return -1;
  }
  unsigned char* next = buffer;
  unsigned char* const end = next + length;
  while (next < end) {
    const long got = syscall(SYS_getrandom, next, (size_t)(end - next), 0);
    if (got < 0) {
      if (errno == EINTR) {
        continue;
      }
      return -1;
    }
    if (got == 0) {
      errno = EIO;
      return -1;
    }
    next += got;
  }
  return 0;
}

static void no_entropy(void) {
  static const char message[] = "tcptune: cannot get entropy for arc4random\n";
  (void)syscall(SYS_write, STDERR_FILENO, message, sizeof message - 1);
  abort();
}

/* Never fails: /dev/urandom where the kernel has no getrandom, and abort() where neither gives
 * entropy, as glibc's. */
__attribute__((visibility("hidden"))) uint32_t arc4random(void) {
  uint32_t value = 0;
  long got;
  do {
    got = syscall(SYS_getrandom, &value, sizeof value, 0);
  } while (got < 0 && errno == EINTR);
  if (got == (long)sizeof value) {
    return value;
  }
  if (got >= 0 || errno != ENOSYS) {
    no_entropy();
  }
  const long fd = syscall(SYS_open, "/dev/urandom", O_RDONLY | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) {
    no_entropy();
  }
  do {
    got = syscall(SYS_read, fd, &value, sizeof value);
  } while (got < 0 && errno == EINTR);
  (void)syscall(SYS_close, fd);
  if (got != (long)sizeof value) {
    no_entropy();
  }
  return value;
}
