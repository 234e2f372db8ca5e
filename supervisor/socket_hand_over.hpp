// A TCP socket created by the supervisor for a program's trapped socket() and handed over
// (SECCOMP_IOCTL_NOTIF_ADDFD with SECCOMP_ADDFD_FLAG_SEND, Linux 5.14): the descriptor is
// installed in the program and the call answered with its number in one step, as the kernel's
// own socket() would (the lowest free number, the program's RLIMIT_NOFILE, O_CLOEXEC as asked;
// SOCK_NONBLOCK is the socket's). What the socket keeps of its creator is made to match first:
// its network namespace, and the credentials that firewall owner matches, uid routing and
// SO_REUSEPORT groups look at (fsuid and fsgid). Where they differ it is not created: the call
// goes on untuned, and the kernel makes the socket. The credentials are read at every call
// (PIDFD_GET_INFO, 6.13+, else /proc/TID/status). A thread's network namespace changes only by
// its own unshare or setns, which the filter traps (forget() then drops what is known of it), so
// it is read from /proc once per thread, where PIDFD_GET_INFO has just shown that the pidfd's
// thread, and so the caller, is the one it was read for.
#pragma once

#include <sys/types.h>

#include <string>
#include <unordered_set>
namespace tcptune::supervisor {

class HandOverCheck {
 public:
  HandOverCheck();

  // Why a socket created here would not be the one the thread's own socket() makes ("" if it
  // would): `pidfd` (-1 if none) gives its credentials without /proc where the kernel can.
  // `key` names the cause, for a warning once per cause; "thread_gone" when `pidfd` names a
  // thread that has died (the caller's id was reused): open a pidfd again and ask again.
  [[nodiscard]] std::string obstacle(pid_t thread, int pidfd, std::string& key);
  // The thread may be in another network namespace from now on (a trapped unshare or setns).
  void forget(pid_t thread) { same_namespace_.erase(thread); }

 private:
  static constexpr std::size_t kMostThreads = 4096;
  std::string network_namespace_;  // "net:[4026531840]", this process's
  uid_t fsuid_;
  gid_t fsgid_;
  std::unordered_set<pid_t> same_namespace_;  // threads seen in this process's network namespace
};

}  // namespace tcptune::supervisor
