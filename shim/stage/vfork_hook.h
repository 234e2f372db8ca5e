/* vfork(): the hook that lets the core skip its check for a vfork() child (a getpid on every
   close of a TCP socket) while no vfork() is in flight. The child of vfork() runs in its
   parent's memory, on its parent's stack and thread data, until it execs or exits; its closes
   must leave the parent's records alone, and only a system call tells it from its parent. */
#ifndef TCPTUNE_STAGE_VFORK_HOOK_H
#define TCPTUNE_STAGE_VFORK_HOOK_H

#pragma GCC visibility push(hidden)

/* The number of vfork() calls through the hook whose parent has not returned yet: raised
   before the system call, lowered in the parent when it returns (the parent waits for its
   child to exec or exit). A child sees it raised: its thread raised it. */
extern int stage_vforks_in_flight;

#pragma GCC visibility pop

#endif
