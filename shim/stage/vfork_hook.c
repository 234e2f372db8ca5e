/* The exported vfork(): libc's own, between a raise and a lower of stage_vforks_in_flight.
   Written in assembly because a C function cannot call vfork(): the child returns from it
   first and then reuses the stack under the frame the parent returns through. This one keeps
   nothing on the stack across libc's vfork (which keeps its own return address in a register,
   as every x86-64 vfork must): the program's return address waits in %rdx, which libc's vfork
   and the system call leave as they are, and both the parent and the child jump back through
   it. */
#include "vfork_hook.h"

#include <errno.h>
#include <stddef.h>

#include "dl_functions.h"
#include "routes.h"

int stage_vforks_in_flight;

/* libc's vfork, found on the first call (before any child exists, so an ordinary call). */
__attribute__((visibility("hidden"))) void* stage_vfork_next;

/* The fallback where dlsym finds no vfork (as glibc's: the return address in a register). */
extern char stage_raw_vfork[];

/* stage_raw_vfork's failure, in the parent (no child was made): errno, and -1. */
__attribute__((visibility("hidden"), used)) int stage_vfork_failed(int error) {
  errno = error;
  return -1;
}

__attribute__((visibility("hidden"), used)) void* stage_resolve_vfork(void) {
  void* next = stage_next_symbol("vfork");
  if (next == NULL) {
    if (stage_dl() == NULL) {
      return stage_raw_vfork; /* for this call: dlsym may be found later (dl_functions.h) */
    }
    next = stage_raw_vfork;
  }
  __atomic_store_n(&stage_vfork_next, next, __ATOMIC_RELEASE); /* racing threads store the same */
  return next;
}

#if !defined(__x86_64__)
#error "vfork_hook.c: the vfork() hook is written for x86-64"
#endif

/* Built without CET (shim/CMakeLists.txt): this code is incompatible with a shadow stack. */
__asm__(
    ".text\n"
    ".globl vfork\n"
    ".type vfork, @function\n"
    ".p2align 4\n"
    "vfork:\n"
    ".cfi_startproc\n"
    "  movq stage_vfork_next(%rip), %rax\n"
    "  testq %rax, %rax\n"
    "  jnz 1f\n"
    "  subq $8, %rsp\n" /* the call below on a 16-byte aligned stack */
    ".cfi_adjust_cfa_offset 8\n"
    "  call stage_resolve_vfork\n"
    "  addq $8, %rsp\n"
    ".cfi_adjust_cfa_offset -8\n"
    "1:\n"
    "  lock incl stage_vforks_in_flight(%rip)\n"
    "  popq %rdx\n" /* the program's return address */
    ".cfi_adjust_cfa_offset -8\n"
    ".cfi_register %rip, %rdx\n"
    "  call *%rax\n"
    "  testl %eax, %eax\n"
    "  jz 2f\n" /* the child: the count stays raised while it runs in the parent's memory */
    "  lock decl stage_vforks_in_flight(%rip)\n" /* the parent, or no child (errno set) */
    "2:\n"
    "  jmpq *%rdx\n"
    ".cfi_endproc\n"
    ".size vfork, .-vfork\n"
    "\n"
    ".hidden stage_raw_vfork\n"
    ".type stage_raw_vfork, @function\n"
    ".p2align 4\n"
    "stage_raw_vfork:\n"
    ".cfi_startproc\n"
    "  popq %rdi\n"
    ".cfi_adjust_cfa_offset -8\n"
    ".cfi_register %rip, %rdi\n"
    "  movl $58, %eax\n" /* SYS_vfork */
    "  syscall\n"
    "  pushq %rdi\n"
    ".cfi_adjust_cfa_offset 8\n"
    "  cmpq $-4095, %rax\n"
    "  jae 3f\n"
    "  ret\n"
    "3:\n"
    "  negl %eax\n"
    "  movl %eax, %edi\n"
    "  jmp stage_vfork_failed\n"
    ".cfi_endproc\n"
    ".size stage_raw_vfork, .-stage_raw_vfork\n");
