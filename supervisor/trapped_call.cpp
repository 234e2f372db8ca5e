#include "trapped_call.hpp"

#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace tcptune::supervisor {

bool TrappedCall::still_pending() const noexcept {
  std::uint64_t id = request_.id;
  return ioctl(listener_, SECCOMP_IOCTL_NOTIF_ID_VALID, &id) == 0;
}

int TrappedCall::duplicate_fd(int fd) const {
  const auto from = [fd](int pidfd) {
    return pidfd < 0 ? -1 : static_cast<int>(syscall(SYS_pidfd_getfd, pidfd, fd, 0));
  };
  const int duplicate = from(threads_.pidfd(thread()));
  if (duplicate >= 0 || errno != ESRCH) {
    return duplicate;
  }
  // The kept pidfd named a thread that died; this one has its id. Opened again, once.
  threads_.forget(thread());
  return from(threads_.pidfd(thread()));
}

bool TrappedCall::read_memory(std::uint64_t address, void* out, std::size_t length) const noexcept {
  iovec local{out, length};
  // An address in the program, never dereferenced here.
  // NOLINTNEXTLINE(performance-no-int-to-ptr)
  iovec remote{reinterpret_cast<void*>(static_cast<std::uintptr_t>(address)), length};
  return process_vm_readv(thread(), &local, 1, &remote, 1, 0) == static_cast<ssize_t>(length);
}

bool TrappedCall::read_string(std::uint64_t address, std::string& out, std::size_t most) const {
  constexpr std::uint64_t kPage = 4096;  // the smallest page: a read never crosses into the next
  out.clear();
  char chunk[kPage];
  while (out.size() <= most) {
    const std::size_t length = kPage - (address % kPage);
    if (!read_memory(address, chunk, length)) {
      return false;
    }
    const auto* end = static_cast<const char*>(std::memchr(chunk, '\0', length));
    out.append(chunk, end == nullptr ? length : static_cast<std::size_t>(end - chunk));
    if (end != nullptr) {
      return out.size() <= most;
    }
    address += length;
  }
  return false;
}

void TrappedCall::continue_call() const noexcept {
  seccomp_notif_resp response{};
  response.id = request_.id;
  response.flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
  // ENOENT: the call was withdrawn (a signal, the thread died); nothing is left to answer.
  (void)ioctl(listener_, SECCOMP_IOCTL_NOTIF_SEND, &response);
}

int TrappedCall::hand_over(int fd, bool cloexec) const noexcept {
  seccomp_notif_addfd addfd{};
  addfd.id = request_.id;
  addfd.flags = SECCOMP_ADDFD_FLAG_SEND;
  addfd.srcfd = static_cast<__u32>(fd);
  addfd.newfd_flags = cloexec ? O_CLOEXEC : 0;
  return ioctl(listener_, SECCOMP_IOCTL_NOTIF_ADDFD, &addfd);
}

void TrappedCall::complete_call(std::int64_t result, int error) const noexcept {
  seccomp_notif_resp response{};
  response.id = request_.id;
  response.val = result;
  response.error = error != 0 ? -error : 0;
  (void)ioctl(listener_, SECCOMP_IOCTL_NOTIF_SEND, &response);
}

}  // namespace tcptune::supervisor
