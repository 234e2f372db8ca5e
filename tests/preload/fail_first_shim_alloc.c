/* Preloaded ahead of libtcptune.so: the first malloc() made by the shim's own code returns NULL
 * (ENOMEM), once, so that the shim's operator new throws std::bad_alloc inside the shim. Says so
 * on stderr. Everything else allocates as usual. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

extern void* __libc_malloc(size_t size);

static atomic_int g_failed;
static _Thread_local int t_looking;

static int called_from_shim(const void* address) {
  Dl_info info;
  if (dladdr(address, &info) == 0 || info.dli_fname == NULL) {
    return 0;
  }
  const char* slash = strrchr(info.dli_fname, '/');
  return strcmp(slash != NULL ? slash + 1 : info.dli_fname, "libtcptune.so") == 0;
}

__attribute__((visibility("default"))) void* malloc(size_t size) {
  if (atomic_load(&g_failed) == 0 && !t_looking) {
    t_looking = 1;
    const int from_shim = called_from_shim(__builtin_return_address(0));
    t_looking = 0;
    if (from_shim && atomic_exchange(&g_failed, 1) == 0) {
      char line[96];
      const int length = snprintf(line, sizeof line, "fail_first_shim_alloc: malloc(%zu) of the shim fails\n", size);
      (void)!write(STDERR_FILENO, line, (size_t)length);
      errno = ENOMEM;
      return NULL;
    }
  }
  return __libc_malloc(size);
}
