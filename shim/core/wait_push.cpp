#include "wait_push.hpp"

#include <linux/sockios.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/ioctl.h>

#include "errno_saver.hpp"
#include "fd_table.hpp"
#include "next_symbols.hpp"

namespace tcptune::shim {

constinit thread_local WrittenSinceWait t_written_since_wait [[gnu::tls_model("initial-exec")]];

namespace {

int int_option(int fd, int name) noexcept {
  int value = 0;
  socklen_t len = sizeof value;
  return next::getsockopt(fd, IPPROTO_TCP, name, &value, &len) == 0 ? value : -1;
}

void push_written_socket(const WrittenSocket& noted) noexcept {
  const SocketSlot* slot = fd_table().find(noted.fd);
  if (noted.more || slot == nullptr || slot->generation.load(std::memory_order_acquire) != noted.generation ||
      !slot->has_flag(flag_push_on_wait)) {
    return;
  }
  // Nothing unsent: nothing held back (one ioctl spares the two setsockopt calls).
  int unsent = 0;
  if (ioctl(noted.fd, SIOCOUTQNSD, &unsent) == 0 && unsent == 0) {
    return;
  }
  // The kernel's cork, whoever set it (another process, a raw system call): setting
  // TCP_NODELAY would send a corked message's first part. And TCP_NODELAY already on, set
  // through a dup or by another process sharing the socket: nothing is held back, and
  // clearing it after a push would undo the app's choice.
  if (int_option(noted.fd, TCP_CORK) != 0 || int_option(noted.fd, TCP_NODELAY) != 0) {
    return;
  }
  const int on = 1;
  const int off = 0;
  if (next::setsockopt(noted.fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on) != 0) {
    return;
  }
  next::setsockopt(noted.fd, IPPROTO_TCP, TCP_NODELAY, &off, sizeof off);
  // The app set TCP_NODELAY on another thread meanwhile (its hook clears the flag before the
  // real call): its value stands, not ours.
  if (!slot->has_flag(flag_push_on_wait) && !slot->keep_warm_gate.nagle()) {
    next::setsockopt(noted.fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
  }
}

}  // namespace

void push_written_sockets() noexcept {
  const ErrnoSaver saver;
  WrittenSinceWait& written = t_written_since_wait;
  // Taken first: a signal handler interrupting the pushes below starts from none.
  const std::uint32_t count =
      written.count < WrittenSinceWait::kMaxWritten ? written.count : WrittenSinceWait::kMaxWritten;
  WrittenSocket taken[WrittenSinceWait::kMaxWritten];
  for (std::uint32_t i = 0; i < count; ++i) {
    taken[i] = written.sockets[i];
  }
  std::atomic_signal_fence(std::memory_order_acquire);
  written.count = 0;
  for (std::uint32_t i = 0; i < count; ++i) {
    push_written_socket(taken[i]);
  }
}

}  // namespace tcptune::shim
