// The parts of the seccomp and pidfd ABI newer than Debian 12's kernel headers (6.1), with the
// values of include/uapi/linux/{seccomp,pidfd}.h. A kernel without one answers EINVAL, and the
// caller goes on without it.
#pragma once

#include <fcntl.h>
#include <linux/seccomp.h>
#include <linux/types.h>
#include <sys/ioctl.h>

namespace tcptune::supervisor::kernel {

// PIDFD_GET_INFO (6.13+, include/uapi/linux/pidfd.h): a pidfd's thread group id and credentials
// without /proc.
struct PidfdInfo {
  __u64 mask;
  __u64 cgroupid;
  __u32 pid;
  __u32 tgid;
  __u32 ppid;
  __u32 ruid, rgid, euid, egid, suid, sgid, fsuid, fsgid;
  __s32 exit_code;
  __u32 coredump_mask;
  __u32 spare;
};
inline constexpr unsigned long kPidfdGetInfo = _IOWR(0xFF, 11, PidfdInfo);
inline constexpr __u64 kPidfdInfoPid = 1ULL << 0;
inline constexpr __u64 kPidfdInfoCreds = 1ULL << 1;

// pidfd_open(tid, PIDFD_THREAD): a pidfd for a thread that is not the group leader (6.9+).
inline constexpr unsigned kPidfdThread = O_EXCL;

// SECCOMP_IOCTL_NOTIF_SET_FLAGS with SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP (6.6+): the kernel wakes
// the supervisor on the trapping CPU, about half the round trip of a notification.
inline constexpr unsigned long kNotifSetFlags = SECCOMP_IOW(4, __u64);
inline constexpr unsigned long long kSyncWakeUp = 1ULL << 0;

// SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV (5.19+): once the supervisor has received a
// notification, only a fatal signal interrupts the trapped call, so a signal the program
// handles does not withdraw the call half-tuned.
#ifdef SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV
inline constexpr unsigned long kWaitKillableRecv = SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV;
#else
inline constexpr unsigned long kWaitKillableRecv = 1UL << 5;
#endif

}  // namespace tcptune::supervisor::kernel
