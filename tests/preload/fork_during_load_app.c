/* fork_during_load_app ROUNDS: in each round (a fresh image: the core loads once per process) a
 * thread makes the process's first TCP socket, which loads the core, while the main thread forks
 * children one after the other; each child makes a TCP socket at once and must have it quickly
 * (a child forked while the parent's thread was loading never finishes that load: its calls go
 * on untuned, they never wait for it). Then the image execs itself for the next round.
 * Exits 0 when every child of every round got its socket within 1 s. */
#define _GNU_SOURCE
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum { kChildren = 20 };

static double now_s(void) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return (double)now.tv_sec + (double)now.tv_nsec / 1e9;
}

static void* first_socket(void* unused) {
  (void)unused;
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd >= 0) {
    close(fd);
  }
  return NULL;
}

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? atoi(argv[1]) : 1;
  pthread_t thread;
  if (pthread_create(&thread, NULL, first_socket, NULL) != 0) {
    return 2;
  }
  int slow = 0;
  for (int i = 0; i < kChildren; ++i) {
    const pid_t child = fork();
    if (child == 0) {
      const double start = now_s();
      const int fd = socket(AF_INET, SOCK_STREAM, 0);
      const int fd2 = socket(AF_INET6, SOCK_STREAM, 0);
      _exit(fd < 0 || fd2 < 0 ? 2 : now_s() - start > 1.0 ? 3 : 0);
    }
    int status = 0;
    if (child < 0 || waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      fprintf(stderr, "round %d, child %d: status %#x\n", rounds, i, (unsigned)status);
      ++slow;
    }
  }
  pthread_join(thread, NULL);
  if (slow != 0) {
    return 1;
  }
  if (rounds > 1) {
    char next[16];
    snprintf(next, sizeof next, "%d", rounds - 1);
    execl("/proc/self/exe", argv[0], next, (char*)NULL);
    return 2;
  }
  printf("every child got its sockets at once\n");
  return 0;
}
