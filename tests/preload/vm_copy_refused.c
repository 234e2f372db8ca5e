/* Runs with process_vm_readv and process_vm_writev answered by a seccomp filter as a kernel
 * before 3.2 (ENOSYS) or Docker's default profile before Linux 4.8 (EPERM) answers them, then
 * calls what the shim reads and writes the app's memory for: sigaction (a query, and a change
 * that reports the old handler), connect (the shim reads the peer address to choose a rule) and
 * connect with an unreadable address (the kernel's EFAULT, the program alive).
 *   vm_copy_refused enosys|eperm|none EXPECTED_NODELAY
 * Prints one line per check; exits 0 when all hold, 1 otherwise, 77 where no filter can be
 * installed. */
#include <arpa/inet.h>
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

static int failures;

static void check(int ok, const char* what) {
  printf("%s %s\n", ok ? "ok  " : "FAIL", what);
  failures += !ok;
}

static int refuse_vm_copies(int error) {
  struct sock_filter filter[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_process_vm_readv, 1, 0),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_process_vm_writev, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (unsigned)error),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  struct sock_fprog program = {sizeof filter / sizeof filter[0], filter};
  return prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 && prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &program) == 0;
}

static void on_signal(int number) {
  (void)number;
}

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: vm_copy_refused enosys|eperm|none EXPECTED_NODELAY\n");
    return 2;
  }
  const int error = strcmp(argv[1], "enosys") == 0 ? ENOSYS : strcmp(argv[1], "eperm") == 0 ? EPERM : 0;
  if (error != 0 && !refuse_vm_copies(error)) {
    printf("skipped: no seccomp filter here (%s)\n", strerror(errno));
    return 77;
  }
  char local = 0;
  struct iovec here = {&local, 1};
  errno = 0;
  const long copied = syscall(SYS_process_vm_readv, getpid(), &here, 1, &here, 1, 0);
  printf("process_vm_readv: %ld (%s)\n", copied, strerror(errno));
  check(error == 0 ? copied == 1 : copied == -1 && errno == error, "process_vm_readv answers as asked");

  struct sigaction old;
  memset(&old, 0x5a, sizeof old);
  check(sigaction(SIGUSR1, NULL, &old) == 0 && old.sa_handler == SIG_DFL, "sigaction query reports SIG_DFL");
  struct sigaction mine;
  memset(&mine, 0, sizeof mine);
  mine.sa_handler = on_signal;
  check(sigaction(SIGUSR1, &mine, NULL) == 0, "sigaction installs a handler");
  memset(&old, 0x5a, sizeof old);
  check(sigaction(SIGUSR1, &mine, &old) == 0 && old.sa_handler == on_signal,
        "sigaction reports the app's own handler as the old one");
  check(raise(SIGUSR1) == 0, "the handler runs");

  const int listener = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in address;
  memset(&address, 0, sizeof address);
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof address;
  if (bind(listener, (struct sockaddr*)&address, sizeof address) != 0 || listen(listener, 1) != 0 ||
      getsockname(listener, (struct sockaddr*)&address, &length) != 0) {
    perror("listen");
    return 2;
  }
  const int client = socket(AF_INET, SOCK_STREAM, 0);
  check(connect(client, (struct sockaddr*)&address, sizeof address) == 0, "connect succeeds");
  int nodelay = -1;
  socklen_t size = sizeof nodelay;
  getsockopt(client, IPPROTO_TCP, TCP_NODELAY, &nodelay, &size);
  printf("client TCP_NODELAY=%d\n", nodelay);
  check(nodelay == atoi(argv[2]), "the client is tuned as the policy says");

  void* const unreadable = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  const int other = socket(AF_INET, SOCK_STREAM, 0);
  errno = 0;
  check(connect(other, (const struct sockaddr*)unreadable, sizeof address) == -1 && errno == EFAULT,
        "connect to an unreadable address: EFAULT");
  close(other);
  close(client);
  close(listener);
  printf("%d failed\n", failures);
  return failures == 0 ? 0 : 1;
}
