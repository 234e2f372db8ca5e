// Preloaded after libtcptune.so: its constructor runs before the shim's and opens a socket on a
// thread with a small stack (SMALL_STACK_KIB, default 64), so the shim loads the policy there,
// lazily, from its socket() hook, as it would in a program whose first socket call comes from
// such a thread.
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

static void* open_a_socket(void* unused) {
  (void)unused;
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd >= 0) {
    close(fd);
  }
  return NULL;
}

__attribute__((constructor)) static void first_hook_on_a_small_stack(void) {
  const char* kib = getenv("SMALL_STACK_KIB");
  const size_t bytes = (kib != NULL ? strtoul(kib, NULL, 10) : 64) * 1024;
  pthread_attr_t attributes;
  pthread_t thread;
  pthread_attr_init(&attributes);
  if (pthread_attr_setstacksize(&attributes, bytes) != 0 ||
      pthread_create(&thread, &attributes, open_a_socket, NULL) != 0) {
    fprintf(stderr, "small_stack_first_hook: cannot start a thread with a %zu-byte stack\n", bytes);
    _exit(3);
  }
  pthread_join(thread, NULL);
  pthread_attr_destroy(&attributes);
}
