// Socket calls with pointers the kernel rejects (EFAULT): a hook must give the app exactly the
// kernel's answer, never dereference what the kernel would only probe. Each case runs in a
// forked child on a fresh TCP socket, before connect() (the rule is not chosen yet and the shim
// holds buffer options) or after it, and prints one line: the case, the return value and the
// errno name, or the signal that killed the child. The harness runs this program with and
// without the shim and compares the lines.
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/wait.h>

#include <csignal>
#include <functional>
#include <string>
#include <vector>

#include "robust_util.hpp"

namespace {

// An address the kernel refuses (nothing is mapped at page 0), read through a volatile so the
// compiler does not reason about the calls it is passed to.
volatile std::uintptr_t g_bad_address = 1;
void* const kBad = reinterpret_cast<void*>(g_bad_address);
auto* const kBadLen = reinterpret_cast<socklen_t*>(g_bad_address);
auto* const kBadAddr = reinterpret_cast<const sockaddr*>(g_bad_address);

int g_port = 0;

struct Case {
  std::string name;
  bool connected;
  std::function<long(int fd)> call;
};

const char* errno_name(int error) {
  switch (error) {
    case 0: return "0";
    case EFAULT: return "EFAULT";
    case EINVAL: return "EINVAL";
    case EBADF: return "EBADF";
    case ENOTCONN: return "ENOTCONN";
    case EPIPE: return "EPIPE";
    case EISCONN: return "EISCONN";
    case EOPNOTSUPP: return "EOPNOTSUPP";
    case ENOPROTOOPT: return "ENOPROTOOPT";
    case EINPROGRESS: return "EINPROGRESS";
    case EALREADY: return "EALREADY";
    case ECONNREFUSED: return "ECONNREFUSED";
    case EAFNOSUPPORT: return "EAFNOSUPPORT";
    case EDESTADDRREQ: return "EDESTADDRREQ";
    case EMSGSIZE: return "EMSGSIZE";
    default: return "other";
  }
}

std::vector<Case> cases() {
  const int one = 1;
  const int rcvbuf = 65536;
  static char payload[16] = "0123456789abcde";
  std::vector<Case> list;
  auto add = [&](const std::string& name, bool connected, std::function<long(int)> call) {
    list.push_back({name, connected, std::move(call)});
  };
  for (const bool connected : {false, true}) {
    const std::string when = connected ? "connected" : "unconnected";
    add(when + " setsockopt SO_RCVBUF value=bad", connected,
        [](int fd) { return setsockopt(fd, SOL_SOCKET, SO_RCVBUF, kBad, 4); });
    add(when + " setsockopt SO_SNDBUF value=bad", connected,
        [](int fd) { return setsockopt(fd, SOL_SOCKET, SO_SNDBUF, kBad, 4); });
    add(when + " setsockopt SO_RCVBUFFORCE value=bad", connected,
        [](int fd) { return setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, kBad, 4); });
    add(when + " setsockopt TCP_NODELAY value=bad", connected,
        [](int fd) { return setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, kBad, 4); });
    add(when + " setsockopt TCP_CORK value=bad", connected,
        [](int fd) { return setsockopt(fd, IPPROTO_TCP, TCP_CORK, kBad, 4); });
    add(when + " setsockopt SO_KEEPALIVE value=bad", connected,
        [](int fd) { return setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, kBad, 4); });
    add(when + " setsockopt TCP_CONGESTION value=bad", connected,
        [](int fd) { return setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, kBad, 4); });
    add(when + " getsockopt SO_RCVBUF len=bad", connected, [](int fd) {
      int value = 0;
      return getsockopt(fd, SOL_SOCKET, SO_RCVBUF, &value, kBadLen);
    });
    add(when + " getsockopt SO_RCVBUF value=bad", connected, [](int fd) {
      socklen_t len = sizeof(int);
      return getsockopt(fd, SOL_SOCKET, SO_RCVBUF, kBad, &len);
    });
    add(when + " getsockopt SO_RCVBUF after the app set it, len=bad", connected, [rcvbuf](int fd) {
      setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
      int value = 0;
      return getsockopt(fd, SOL_SOCKET, SO_RCVBUF, &value, kBadLen);
    });
    add(when + " getsockopt SO_RCVBUF after the app set it, value=bad", connected, [rcvbuf](int fd) {
      setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
      socklen_t len = sizeof(int);
      return getsockopt(fd, SOL_SOCKET, SO_RCVBUF, kBad, &len);
    });
    add(when + " getsockopt SO_SNDBUF after the app set it, value=bad", connected, [rcvbuf](int fd) {
      setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &rcvbuf, sizeof rcvbuf);
      socklen_t len = sizeof(int);
      return getsockopt(fd, SOL_SOCKET, SO_SNDBUF, kBad, &len);
    });
    add(when + " getsockopt TCP_NODELAY value=bad", connected, [](int fd) {
      socklen_t len = sizeof(int);
      return getsockopt(fd, IPPROTO_TCP, TCP_NODELAY, kBad, &len);
    });
    add(when + " getsockopt TCP_NODELAY len=bad", connected, [](int fd) {
      int value = 0;
      return getsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &value, kBadLen);
    });
    add(when + " getsockopt TCP_INFO len=bad", connected, [](int fd) {
      tcp_info info{};
      return getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, kBadLen);
    });
    add(when + " connect addr=bad", connected, [](int fd) { return connect(fd, kBadAddr, sizeof(sockaddr_in)); });
    add(when + " connect addr=NULL len=16", connected,
        [](int fd) { return connect(fd, nullptr, sizeof(sockaddr_in)); });
    add(when + " sendto MSG_FASTOPEN addr=bad", connected,
        [](int fd) { return sendto(fd, payload, 8, MSG_FASTOPEN | MSG_NOSIGNAL, kBadAddr, sizeof(sockaddr_in)); });
    add(when + " sendmsg MSG_FASTOPEN msghdr=bad", connected,
        [](int fd) { return sendmsg(fd, static_cast<const msghdr*>(kBad), MSG_FASTOPEN | MSG_NOSIGNAL); });
    add(when + " sendmsg MSG_FASTOPEN msg_name=bad", connected, [](int fd) {
      iovec part{payload, 8};
      msghdr message{};
      message.msg_name = kBad;
      message.msg_namelen = sizeof(sockaddr_in);
      message.msg_iov = &part;
      message.msg_iovlen = 1;
      return sendmsg(fd, &message, MSG_FASTOPEN | MSG_NOSIGNAL);
    });
    add(when + " sendmsg MSG_FASTOPEN msg_iov=bad", connected, [](int fd) {
      sockaddr_in addr = robust::loopback(g_port);
      msghdr message{};
      message.msg_name = &addr;
      message.msg_namelen = sizeof addr;
      message.msg_iov = static_cast<iovec*>(kBad);
      message.msg_iovlen = 1;
      return sendmsg(fd, &message, MSG_FASTOPEN | MSG_NOSIGNAL);
    });
    add(when + " writev iov=bad", connected, [](int fd) { return writev(fd, static_cast<const iovec*>(kBad), 1); });
    add(when + " writev iov_base=bad", connected, [](int fd) {
      iovec part{kBad, 8};
      return writev(fd, &part, 1);
    });
    add(when + " write buf=bad", connected, [](int fd) { return write(fd, kBad, 8); });
    add(when + " send buf=bad", connected, [](int fd) { return send(fd, kBad, 8, MSG_NOSIGNAL); });
    add(when + " sendmsg msghdr=bad", connected,
        [](int fd) { return sendmsg(fd, static_cast<const msghdr*>(kBad), MSG_NOSIGNAL); });
    add(when + " sendmsg MSG_MORE msghdr=bad", connected,
        [](int fd) { return sendmsg(fd, static_cast<const msghdr*>(kBad), MSG_MORE | MSG_NOSIGNAL); });
    add(when + " sendmsg msg_iov=bad", connected, [](int fd) {
      msghdr message{};
      message.msg_iov = static_cast<iovec*>(kBad);
      message.msg_iovlen = 1;
      return sendmsg(fd, &message, MSG_NOSIGNAL);
    });
    add(when + " sendmmsg msgvec=bad", connected,
        [](int fd) { return sendmmsg(fd, static_cast<mmsghdr*>(kBad), 1, MSG_NOSIGNAL); });
    add(when + " sendmmsg msg_iov=bad", connected, [](int fd) {
      mmsghdr messages[1] = {};
      messages[0].msg_hdr.msg_iov = static_cast<iovec*>(kBad);
      messages[0].msg_hdr.msg_iovlen = 1;
      return sendmmsg(fd, messages, 1, MSG_NOSIGNAL);
    });
    add(when + " setsockopt TCP_NODELAY len=2", connected,
        [one](int fd) { return setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, 2); });
  }
  return list;
}

// Runs one case in a child, so a crash ends only the child; prints its line.
void run_case(const Case& c) {
  std::fflush(stdout);
  const pid_t child = fork();
  if (child == 0) {
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (c.connected && robust::connect_loopback(fd, g_port) != 0) {
      std::printf("%s: connect failed\n", c.name.c_str());
      std::fflush(stdout);
      _exit(1);
    }
    errno = 0;
    const long result = c.call(fd);
    const int error = result < 0 ? errno : 0;
    std::printf("%s: result %ld errno %s\n", c.name.c_str(), result, errno_name(error));
    std::fflush(stdout);
    _exit(0);
  }
  int status = 0;
  waitpid(child, &status, 0);
  if (WIFSIGNALED(status)) {
    std::printf("%s: killed by signal %d\n", c.name.c_str(), WTERMSIG(status));
  }
}

}  // namespace

int main() {
  std::signal(SIGPIPE, SIG_IGN);
  const int listener = robust::listen_loopback(256);
  g_port = robust::port_of(listener);
  for (const Case& c : cases()) {
    run_case(c);
  }
  close(listener);
  return 0;
}
