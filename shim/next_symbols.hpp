// The next definition of each interposed libc function (dlsym(RTLD_NEXT)), resolved once,
// lock-free and thread-safe. Resolution is eager in the shim's constructor and lazy when a
// hook runs first (another library's constructor). A symbol that cannot be resolved falls
// back to the raw system call, so a hook never recurses into itself.
#pragma once

#include <dlfcn.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>

#include <atomic>
#include <cerrno>
#include <cstdio>

namespace tcptune::shim {

template <typename Fn>
class NextSymbol {
 public:
  constexpr NextSymbol(const char* name, Fn* fallback) : name_(name), fallback_(fallback) {}

  Fn* get() noexcept {
    Fn* fn = fn_.load(std::memory_order_acquire);
    if (fn == nullptr) [[unlikely]] {
      fn = resolve();
    }
    return fn;
  }
  // Idempotent, preserves errno. Racing threads store the same pointer.
  Fn* resolve() noexcept {
    const int saved_errno = errno;
    void* symbol = dlsym(RTLD_NEXT, name_);
    Fn* fn = symbol != nullptr ? reinterpret_cast<Fn*>(symbol) : fallback_;
    fn_.store(fn, std::memory_order_release);
    errno = saved_errno;
    return fn;
  }

 private:
  const char* name_;
  Fn* fallback_;
  std::atomic<Fn*> fn_{nullptr};
};

using SocketFn = int(int, int, int);
using ConnectFn = int(int, const sockaddr*, socklen_t);
using ListenFn = int(int, int);
using AcceptFn = int(int, sockaddr*, socklen_t*);
using Accept4Fn = int(int, sockaddr*, socklen_t*, int);
using SetsockoptFn = int(int, int, int, const void*, socklen_t);
using GetsockoptFn = int(int, int, int, void*, socklen_t*);
using WriteFn = ssize_t(int, const void*, size_t);
using SendFn = ssize_t(int, const void*, size_t, int);
using SendtoFn = ssize_t(int, const void*, size_t, int, const sockaddr*, socklen_t);
using SendmsgFn = ssize_t(int, const msghdr*, int);
using SendmmsgFn = int(int, mmsghdr*, unsigned int, int);
using WritevFn = ssize_t(int, const iovec*, int);
using SendfileFn = ssize_t(int, int, off_t*, size_t);
using SpliceFn = ssize_t(int, loff_t*, int, loff_t*, size_t, unsigned int);
using ReadFn = ssize_t(int, void*, size_t);
using RecvFn = ssize_t(int, void*, size_t, int);
using RecvfromFn = ssize_t(int, void*, size_t, int, sockaddr*, socklen_t*);
using RecvmsgFn = ssize_t(int, msghdr*, int);
using ReadvFn = ssize_t(int, const iovec*, int);
using CloseFn = int(int);
using CloseRangeFn = int(unsigned int, unsigned int, int);
using ClosefromFn = void(int);
using DupFn = int(int);
using Dup2Fn = int(int, int);
using Dup3Fn = int(int, int, int);
using FcntlFn = int(int, int, ...);
using FcloseFn = int(FILE*);
using FdopenFn = FILE*(int, const char*);
using SigactionFn = int(int, const struct sigaction*, struct sigaction*);
using PosixSpawnFn = int(pid_t*, const char*, const posix_spawn_file_actions_t*, const posix_spawnattr_t*,
                         char* const[], char* const[]);

// One table of every next symbol (defined in next_symbols.cpp).
struct NextSymbols {
  NextSymbol<SocketFn> socket;
  NextSymbol<ConnectFn> connect;
  NextSymbol<ListenFn> listen;
  NextSymbol<AcceptFn> accept;
  NextSymbol<Accept4Fn> accept4;
  NextSymbol<SetsockoptFn> setsockopt;
  NextSymbol<GetsockoptFn> getsockopt;
  NextSymbol<WriteFn> write;
  NextSymbol<SendFn> send;
  NextSymbol<SendtoFn> sendto;
  NextSymbol<SendmsgFn> sendmsg;
  NextSymbol<SendmmsgFn> sendmmsg;
  NextSymbol<WritevFn> writev;
  NextSymbol<SendfileFn> sendfile;
  NextSymbol<SendfileFn> sendfile64;
  NextSymbol<SpliceFn> splice;
  NextSymbol<ReadFn> read;
  NextSymbol<RecvFn> recv;
  NextSymbol<RecvfromFn> recvfrom;
  NextSymbol<RecvmsgFn> recvmsg;
  NextSymbol<ReadvFn> readv;
  NextSymbol<CloseFn> close;
  NextSymbol<CloseRangeFn> close_range;
  NextSymbol<ClosefromFn> closefrom;
  NextSymbol<DupFn> dup;
  NextSymbol<Dup2Fn> dup2;
  NextSymbol<Dup3Fn> dup3;
  NextSymbol<FcntlFn> fcntl;
  NextSymbol<FcntlFn> fcntl64;
  NextSymbol<FcloseFn> fclose;
  NextSymbol<FdopenFn> fdopen;
  NextSymbol<SigactionFn> sigaction;
  NextSymbol<PosixSpawnFn> posix_spawn;
  NextSymbol<PosixSpawnFn> posix_spawnp;
};

NextSymbols& next() noexcept;
void resolve_all_next_symbols() noexcept;

// Shorthands the core uses for its own socket calls, so that other interposers later in the
// chain see them too.
inline int next_setsockopt(int fd, int level, int name, const void* value, socklen_t len) noexcept {
  return next().setsockopt.get()(fd, level, name, value, len);
}
inline int next_getsockopt(int fd, int level, int name, void* value, socklen_t* len) noexcept {
  return next().getsockopt.get()(fd, level, name, value, len);
}

}  // namespace tcptune::shim
