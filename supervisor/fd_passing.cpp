#include "fd_passing.hpp"

#include <sys/socket.h>

#include <cerrno>
#include <cstring>

namespace tcptune::supervisor {

namespace {

struct StatusMessage {
  int status = 0;
  iovec io{&status, sizeof status};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr header{};

  StatusMessage() {
    header.msg_iov = &io;
    header.msg_iovlen = 1;
    header.msg_control = control;
    header.msg_controllen = sizeof control;
  }
  StatusMessage(const StatusMessage&) = delete;
  StatusMessage& operator=(const StatusMessage&) = delete;
};

}  // namespace

int send_status(int channel, int status, int fd) noexcept {
  StatusMessage message;
  message.status = status;
  if (fd >= 0) {
    cmsghdr* control = CMSG_FIRSTHDR(&message.header);
    control->cmsg_level = SOL_SOCKET;
    control->cmsg_type = SCM_RIGHTS;
    control->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(control), &fd, sizeof fd);
  } else {
    message.header.msg_control = nullptr;
    message.header.msg_controllen = 0;
  }
  ssize_t sent = 0;
  do {
    sent = sendmsg(channel, &message.header, MSG_NOSIGNAL);
  } while (sent < 0 && errno == EINTR);
  return sent == static_cast<ssize_t>(sizeof message.status) ? 0 : errno;
}

bool receive_status(int channel, int& status, int& fd) noexcept {
  StatusMessage message;
  fd = -1;
  ssize_t received = 0;
  do {
    received = recvmsg(channel, &message.header, MSG_CMSG_CLOEXEC);
  } while (received < 0 && errno == EINTR);
  if (received != static_cast<ssize_t>(sizeof message.status)) {
    return false;
  }
  status = message.status;
  const cmsghdr* control = CMSG_FIRSTHDR(&message.header);
  if (control != nullptr && control->cmsg_level == SOL_SOCKET && control->cmsg_type == SCM_RIGHTS &&
      control->cmsg_len == CMSG_LEN(sizeof(int))) {
    std::memcpy(&fd, CMSG_DATA(control), sizeof fd);
  }
  return true;
}

}  // namespace tcptune::supervisor
