// The filter run by the kernel: a child installs it with a listener and makes calls; the test
// sees which of them arrive as notifications (and lets each continue).
#include "seccomp_filter.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/netlink.h>
#include <linux/seccomp.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstring>
#include <vector>

#include "fd_passing.hpp"

namespace tcptune::supervisor {
namespace {

int install_with_listener(const std::vector<sock_filter>& filter) {
  sock_fprog program{static_cast<unsigned short>(filter.size()), const_cast<sock_filter*>(filter.data())};
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
    return -1;
  }
  return static_cast<int>(syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &program));
}

// The system call numbers the child's calls notified, in order.
std::vector<int> notified_calls(const FilterSpec& spec, void (*calls)()) {
  int channel[2];
  EXPECT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, channel), 0);
  const pid_t child = fork();
  if (child == 0) {
    close(channel[0]);
    const int listener = install_with_listener(build_filter(spec));
    if (listener < 0 || send_status(channel[1], 0, listener) != 0) {
      _exit(2);
    }
    close(listener);
    calls();
    _exit(0);
  }
  close(channel[1]);
  std::vector<int> numbers;
  int status = 0;
  int listener = -1;
  if (receive_status(channel[0], status, listener) && listener >= 0) {
    for (;;) {
      pollfd ready{listener, POLLIN, 0};
      if (poll(&ready, 1, 5000) != 1 || (ready.revents & POLLIN) == 0) {
        break;  // POLLHUP: the child exited
      }
      seccomp_notif request{};
      if (ioctl(listener, SECCOMP_IOCTL_NOTIF_RECV, &request) != 0) {
        continue;
      }
      numbers.push_back(request.data.nr);
      seccomp_notif_resp response{};
      response.id = request.id;
      response.flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
      (void)ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, &response);
    }
    close(listener);
  }
  close(channel[0]);
  EXPECT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  return numbers;
}

void socket_calls() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  const int on = 1;
  (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
  (void)setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof on);
  (void)setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &on, sizeof on);
  (void)listen(fd, 1);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const int client = socket(AF_INET, SOCK_STREAM, 0);
  (void)connect(client, reinterpret_cast<sockaddr*>(&address), sizeof address);
  close(client);
  close(fd);
}

// Sends with and without MSG_FASTOPEN; the fast-open ones to a closed loopback port, nonblocking.
void send_calls() {
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = htons(9);
  const int udp = socket(AF_INET, SOCK_DGRAM, 0);
  (void)sendto(udp, "x", 1, 0, reinterpret_cast<sockaddr*>(&address), sizeof address);
  char byte = 'x';
  iovec part{&byte, 1};
  msghdr message{};
  message.msg_name = &address;
  message.msg_namelen = sizeof address;
  message.msg_iov = &part;
  message.msg_iovlen = 1;
  (void)sendmsg(udp, &message, MSG_DONTWAIT);
  close(udp);
  const int first = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
  (void)sendto(first, "x", 1, MSG_FASTOPEN, reinterpret_cast<sockaddr*>(&address), sizeof address);
  close(first);
  const int second = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
  (void)sendmsg(second, &message, MSG_FASTOPEN | MSG_NOSIGNAL);
  close(second);
}

TEST(SeccompFilter, TrapsConnectAndListenOnly) {
  EXPECT_EQ(notified_calls(FilterSpec{}, socket_calls), (std::vector<int>{SYS_listen, SYS_connect}));
}

TEST(SeccompFilter, TrapsExactlyTheNamedSockoptPairs) {
  FilterSpec spec;
  spec.connect = false;
  spec.listen = false;
  spec.setsockopt = {{IPPROTO_TCP, TCP_NODELAY}, {SOL_SOCKET, SO_KEEPALIVE}};
  EXPECT_EQ(notified_calls(spec, socket_calls), (std::vector<int>{SYS_setsockopt, SYS_setsockopt}));
}

TEST(SeccompFilter, TrapsOnlyTheSendsThatConnect) {
  FilterSpec spec;
  spec.connect = false;
  spec.listen = false;
  EXPECT_EQ(notified_calls(spec, send_calls), (std::vector<int>{SYS_sendto, SYS_sendmsg}));
}

// execve and execveat of a path that does not exist: each fails, after its notification.
void exec_calls() {
  char* const argv[] = {nullptr};
  (void)execve("/nonexistent/tcptune-exec-probe", argv, argv);
  (void)syscall(SYS_execveat, AT_FDCWD, "/nonexistent/tcptune-exec-probe", argv, argv, 0);
}

TEST(SeccompFilter, TrapsExecOnlyWhenAsked) {
  EXPECT_TRUE(notified_calls(FilterSpec{}, exec_calls).empty());
  FilterSpec spec;
  spec.exec = true;
  EXPECT_EQ(notified_calls(spec, exec_calls), (std::vector<int>{SYS_execve, SYS_execveat}));
}

// Each a socket() the kernel reads as its ints: the ones that make a TCP socket first (the last
// with garbage in the registers' upper halves), then others, each closed again.
void socket_creations() {
  constexpr long kUpperHalf = 1L << 32;
  const long calls[][3] = {
      {AF_INET, SOCK_STREAM, 0},
      {AF_INET6, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, IPPROTO_TCP},
      {kUpperHalf | AF_INET, kUpperHalf | SOCK_STREAM, kUpperHalf},
      {AF_INET, SOCK_DGRAM, 0},
      {AF_UNIX, SOCK_STREAM, 0},
      {AF_INET, SOCK_STREAM, 262},         // IPPROTO_MPTCP
      {AF_INET, SOCK_STREAM | 0x4000, 0},  // a flag the kernel refuses (EINVAL)
      {12345, SOCK_STREAM, 0},             // a family it does not know (EAFNOSUPPORT)
  };
  for (const auto& call : calls) {
    const long fd = syscall(SYS_socket, call[0], call[1], call[2]);
    if (fd >= 0) {
      close(static_cast<int>(fd));
    }
  }
}

TEST(SeccompFilter, TrapsTcpSocketCreationOnlyWhenAsked) {
  FilterSpec spec;
  spec.connect = false;
  spec.listen = false;
  EXPECT_TRUE(notified_calls(spec, socket_creations).empty());
  spec.tcp_sockets = true;
  EXPECT_EQ(notified_calls(spec, socket_creations), (std::vector<int>{SYS_socket, SYS_socket, SYS_socket}));
}

// A bind of each kind: TCP, UDP, unix (an abstract name) and netlink, each to a free address.
void bind_calls() {
  sockaddr_in inet{};
  inet.sin_family = AF_INET;
  inet.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  for (const int type : {SOCK_STREAM, SOCK_DGRAM}) {
    const int fd = socket(AF_INET, type, 0);
    EXPECT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&inet), sizeof inet), 0);
    close(fd);
  }
  sockaddr_un local{};
  local.sun_family = AF_UNIX;
  const char name[] = "\0tcptune-seccomp-filter-test";
  std::memcpy(local.sun_path, name, sizeof name - 1);
  const int unix_fd = socket(AF_UNIX, SOCK_DGRAM, 0);
  EXPECT_EQ(bind(unix_fd, reinterpret_cast<sockaddr*>(&local), offsetof(sockaddr_un, sun_path) + sizeof name - 1), 0);
  close(unix_fd);
  sockaddr_nl kernel_link{};
  kernel_link.nl_family = AF_NETLINK;
  const int netlink_fd = socket(AF_NETLINK, SOCK_RAW, NETLINK_ROUTE);
  EXPECT_EQ(bind(netlink_fd, reinterpret_cast<sockaddr*>(&kernel_link), sizeof kernel_link), 0);
  close(netlink_fd);
}

// The hand-over's filter (TCP socket(), unshare, setns) traps no bind, of any kind of socket:
// only the TCP socket()'s notification arrives.
TEST(SeccompFilter, TrapsNoBind) {
  FilterSpec spec;
  EXPECT_TRUE(notified_calls(spec, bind_calls).empty());
  spec.tcp_sockets = true;
  spec.namespace_changes = true;
  EXPECT_EQ(notified_calls(spec, bind_calls), (std::vector<int>{SYS_socket}));
}

// unshare and setns that change nothing (no flags; an invalid descriptor): each fails or does
// nothing, after its notification.
void namespace_calls() {
  (void)syscall(SYS_unshare, 0);
  (void)syscall(SYS_setns, -1, 0);
}

TEST(SeccompFilter, TrapsNamespaceChangesOnlyWhenAsked) {
  FilterSpec spec;
  EXPECT_TRUE(notified_calls(spec, namespace_calls).empty());
  spec.namespace_changes = true;
  EXPECT_EQ(notified_calls(spec, namespace_calls), (std::vector<int>{SYS_unshare, SYS_setns}));
}

TEST(SeccompFilter, NothingTrappedAllowsEverything) {
  FilterSpec spec;
  spec.connect = false;
  spec.listen = false;
  spec.fastopen_sends = false;
  EXPECT_TRUE(notified_calls(spec, socket_calls).empty());
  EXPECT_TRUE(notified_calls(spec, send_calls).empty());
}

}  // namespace
}  // namespace tcptune::supervisor
