/* fork_while_loader_busy_app MODE CHILDREN: a thread keeps the dynamic loader busy (MODE walk:
 * dl_iterate_phdr in a loop, as profilers and unwinders do; MODE open: dlopen and dlclose in a
 * loop, as plugin hosts do) while the main thread, which has made no socket, forks CHILDREN
 * children one after the other. Each child listens on a TCP socket of its own (a conn_open
 * record for it, when it is tuned) and exits; an alarm ends one that hangs (status SIGALRM).
 * glibc 2.36 leaves the loader's lock held in a child forked while another thread held it, so
 * a child that uses the loader waits forever. Exits 0 when every child exited 0 on its own. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile int stop;
static int open_mode;

static int look_at_object(struct dl_phdr_info* info, size_t size, void* data) {
  (void)info;
  (void)size;
  (void)data;
  for (volatile int spin = 0; spin < 2000; ++spin) {
  }
  return 0;
}

static void* keep_loader_busy(void* unused) {
  (void)unused;
  while (!stop) {
    if (open_mode) {
      void* library = dlopen("libz.so.1", RTLD_NOW);
      if (library != NULL) {
        dlclose(library);
      }
      library = dlopen("libm.so.6", RTLD_NOW);
      (void)library;
    } else {
      dl_iterate_phdr(look_at_object, NULL);
    }
  }
  return NULL;
}

static int listen_once(void) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in address;
  memset(&address, 0, sizeof address);
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (fd < 0 || bind(fd, (const struct sockaddr*)&address, sizeof address) != 0 || listen(fd, 1) != 0) {
    return 2;
  }
  close(fd);
  return 0;
}

int main(int argc, char** argv) {
  if (argc != 3) {
    return 2;
  }
  open_mode = strcmp(argv[1], "open") == 0;
  const int children = atoi(argv[2]);
  pthread_t thread;
  if (pthread_create(&thread, NULL, keep_loader_busy, NULL) != 0) {
    return 2;
  }
  int failed = 0;
  for (int i = 0; i < children; ++i) {
    const pid_t child = fork();
    if (child == 0) {
      alarm(5);
      _exit(listen_once());
    }
    int status = 0;
    if (child < 0 || waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      fprintf(stderr, "child %d: status %#x\n", i, (unsigned)status);
      ++failed;
    }
  }
  stop = 1;
  pthread_join(thread, NULL);
  printf("children=%d failed=%d\n", children, failed);
  return failed != 0;
}
