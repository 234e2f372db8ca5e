/* The exported vfork(): libc's own, between a raise and a lower of stage_vforks_in_flight.
   Written in assembly because a C function cannot call vfork(): the child returns from it
   first and then reuses the stack under the frame the parent returns through. This one keeps
   nothing on the stack across libc's vfork, nor in a register: each libc's vfork keeps its own
   return address in a register of its choice and may use others (glibc before 2.25 and musl
   %rdx, glibc's shadow-stack path %rsi). The program's return address waits in a per-thread
   slot, one per vfork() of the thread not returned in its parent; a child that calls vfork()
   again takes the next slot and leaves its parent's as it was. */
#include "vfork_hook.h"

#include <errno.h>
#include <stddef.h>

#include "dl_functions.h"
#include "routes.h"

int stage_vforks_in_flight;

/* libc's vfork, found on the first call (before any child exists, so an ordinary call). */
static void* stage_vfork_next;

/* The fallback where dlsym finds no vfork (as glibc's: the return address in a register). */
extern char stage_raw_vfork[];

/* stage_raw_vfork's failure, in the parent (no child was made): errno, and -1. */
__attribute__((visibility("hidden"), used)) int stage_vfork_failed(int error) {
  errno = error;
  return -1;
}

static void* resolve_vfork(void) {
  void* next = __atomic_load_n(&stage_vfork_next, __ATOMIC_ACQUIRE);
  if (next != NULL) {
    return next;
  }
  next = stage_next_symbol("vfork");
  if (next == NULL) {
    if (stage_dl() == NULL) {
      return stage_raw_vfork; /* for this call: dlsym may be found later (dl_functions.h) */
    }
    next = stage_raw_vfork;
  }
  __atomic_store_n(&stage_vfork_next, next, __ATOMIC_RELEASE); /* racing threads store the same */
  return next;
}

/* The program's return addresses of this thread's vfork() calls not returned in their parent.
   A child sees its parent thread's slots (the same memory and thread pointer) and only adds
   above them. Deeper than that (vfork from nested signal handlers), vfork() is libc's alone. */
enum { kVforkDepth = 8 };
static _Thread_local int t_vfork_depth;
static _Thread_local void* t_vfork_return[kVforkDepth];

struct vfork_entry {
  void* next;     /* libc's vfork */
  long returning; /* 1: the hook returns to the program itself; 0: libc's vfork does */
};

__attribute__((visibility("hidden"), used)) struct vfork_entry stage_vfork_enter(void* return_address) {
  struct vfork_entry entry = {resolve_vfork(), 0};
  if (t_vfork_depth < kVforkDepth) {
    t_vfork_return[t_vfork_depth++] = return_address;
    __atomic_add_fetch(&stage_vforks_in_flight, 1, __ATOMIC_SEQ_CST);
    entry.returning = 1;
  }
  return entry;
}

struct vfork_exit {
  void* return_address;
  long result;
};

/* After libc's vfork: the child (0) leaves its slot and the count raised while it runs in the
   parent's memory; the parent (or a failure, errno set and kept) lowers both. */
__attribute__((visibility("hidden"), used)) struct vfork_exit stage_vfork_leave(int result) {
  struct vfork_exit out = {t_vfork_return[t_vfork_depth - 1], result};
  if (result != 0) {
    --t_vfork_depth;
    __atomic_sub_fetch(&stage_vforks_in_flight, 1, __ATOMIC_SEQ_CST);
  }
  return out;
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
    "  movq (%rsp), %rdi\n" /* the program's return address */
    "  subq $8, %rsp\n"     /* the call below on a 16-byte aligned stack */
    ".cfi_adjust_cfa_offset 8\n"
    "  call stage_vfork_enter\n"
    "  addq $8, %rsp\n"
    ".cfi_adjust_cfa_offset -8\n"
    "  testq %rdx, %rdx\n"
    "  jz 1f\n"
    ".cfi_remember_state\n"
    "  addq $8, %rsp\n" /* the return address is in its slot */
    ".cfi_adjust_cfa_offset -8\n"
    ".cfi_undefined %rip\n"
    "  call *%rax\n"
    "  movl %eax, %edi\n"
    "  call stage_vfork_leave\n" /* the stack is aligned as at the program's call */
    "  movq %rax, %rcx\n"
    "  movq %rdx, %rax\n"
    "  jmpq *%rcx\n"
    "1:\n" /* no slot left: libc's vfork returns to the program itself */
    ".cfi_restore_state\n"
    "  jmpq *%rax\n"
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
