/* container_profile: runs a command under a seccomp filter that answers pidfd_getfd, kcmp and
 * process_madvise with EPERM, as Docker's and containerd's default profiles (Kubernetes
 * RuntimeDefault) do for a container without CAP_SYS_PTRACE (moby profiles/seccomp/default.json:
 * those three are allowed only with it, and EPERM is the profile's default answer); every other
 * call is allowed, as those profiles allow what the supervisor uses besides (seccomp, ioctl,
 * pidfd_open, process_vm_readv, ptrace on kernels from 4.8).
 *
 *   container_profile COMMAND [ARG...]
 *
 * The kernel takes a filter from a process with CAP_SYS_ADMIN, or under no_new_privs: without
 * CAP_SYS_ADMIN it sets no_new_privs first, as a container runtime does for an unprivileged
 * user. Exits 77 when the kernel refuses the filter, 127 when COMMAND cannot be run. */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/audit.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#if defined(__x86_64__)
#define NATIVE_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define NATIVE_ARCH AUDIT_ARCH_AARCH64
#else
#error "container_profile knows x86_64 and aarch64"
#endif

static int has_cap_sys_admin(void) {
  struct __user_cap_header_struct header = {_LINUX_CAPABILITY_VERSION_3, 0};
  struct __user_cap_data_struct sets[_LINUX_CAPABILITY_U32S_3];
  memset(sets, 0, sizeof sets);
  if (syscall(SYS_capget, &header, sets) != 0) {
    return 0;
  }
  return (sets[CAP_SYS_ADMIN / 32].effective & (1U << (CAP_SYS_ADMIN % 32))) != 0;
}

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: container_profile COMMAND [ARG...]\n");
    return 2;
  }
  const unsigned refused = SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA);
  struct sock_filter program[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, NATIVE_ARCH, 1, 0),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_pidfd_getfd, 3, 0),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_kcmp, 2, 0),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_process_madvise, 1, 0),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
      BPF_STMT(BPF_RET | BPF_K, refused),
  };
  struct sock_fprog filter = {sizeof program / sizeof program[0], program};
  if (!has_cap_sys_admin() && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
    fprintf(stderr, "container_profile: no_new_privs: %s\n", strerror(errno));
    return 77;
  }
  if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &filter) != 0) {
    fprintf(stderr, "container_profile: seccomp: %s\n", strerror(errno));
    return 77;
  }
  execvp(argv[1], argv + 1);
  fprintf(stderr, "container_profile: %s: %s\n", argv[1], strerror(errno));
  return 127;
}
