#include "held_sockets.hpp"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <thread>

#include "monotonic_clock.hpp"
#include "program_socket.hpp"

namespace tcptune::supervisor {

void close_without_waiting(int fd) noexcept {
  linger lingering{};
  socklen_t length = sizeof lingering;
  if (getsockopt(fd, SOL_SOCKET, SO_LINGER, &lingering, &length) == 0 && lingering.l_onoff != 0 &&
      lingering.l_linger > 0) {
    try {
      std::thread([fd] { close(fd); }).detach();
      return;
    } catch (...) {
      // no thread: closed here, waiting
    }
  }
  close(fd);
}

HeldSockets::~HeldSockets() {
  for (const Held& held : held_) {
    close_without_waiting(held.fd);
  }
}

void HeldSockets::add(OwnedFd socket, std::uint64_t inode, pid_t thread, pid_t process, int app_fd) {
  release(inode);  // the same socket twice: only if an inode was reused, which names another socket
  held_.push_back(Held{socket.get(), inode, thread, process, app_fd});
  (void)socket.release();
}

int HeldSockets::find(std::uint64_t inode) const noexcept {
  if (inode == 0) {
    return -1;
  }
  const auto found =
      std::find_if(held_.begin(), held_.end(), [inode](const Held& held) { return held.inode == inode; });
  return found == held_.end() ? -1 : found->fd;
}

void HeldSockets::release(std::uint64_t inode) noexcept {
  std::erase_if(held_, [inode](const Held& held) {
    if (held.inode != inode) {
      return false;
    }
    close_without_waiting(held.fd);
    return true;
  });
}

namespace {

// Whether the socket has a local port (bound by the program, or by a connect or listen).
bool holds_port(int fd) noexcept {
  sockaddr_storage local{};
  socklen_t length = sizeof local;
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&local), &length) != 0) {
    return true;  // unknown: looked at, as if bound
  }
  if (local.ss_family == AF_INET) {
    return reinterpret_cast<const sockaddr_in&>(local).sin_port != 0;
  }
  if (local.ss_family == AF_INET6) {
    return reinterpret_cast<const sockaddr_in6&>(local).sin6_port != 0;
  }
  return true;
}

}  // namespace

template <typename Looked>
void HeldSockets::drop_closed(const Looked& looked_at) noexcept {
  std::erase_if(held_, [&looked_at](const Held& held) {
    if (!looked_at(held) || program_socket_inode(held.thread, held.app_fd) == held.inode ||
        (held.process != held.thread && program_socket_inode(held.process, held.app_fd) == held.inode)) {
      return false;
    }
    close_without_waiting(held.fd);
    return true;
  });
}

void HeldSockets::sweep() noexcept {
  last_sweep_ns_ = shim::monotonic_ns();
  drop_closed([](const Held&) { return true; });
}

void HeldSockets::sweep_bound() noexcept {
  drop_closed([](const Held& held) { return holds_port(held.fd); });
}

void HeldSockets::sweep_if_due(std::int64_t now_ns) noexcept {
  if (!held_.empty() && now_ns - last_sweep_ns_ >= std::chrono::nanoseconds(kSweepEvery).count()) {
    sweep();
  }
}

}  // namespace tcptune::supervisor
