// The core driven directly, without LD_PRELOAD: real loopback sockets, the events the hooks
// would raise, and the kernel's view read back with getsockopt.
#include "socket_events.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <memory>

#include "process_runtime.hpp"
#include "tcptune/config/policy_loader.hpp"

namespace tcptune::shim {
namespace {

int int_option(int fd, int level, int name) {
  int value = -1;
  socklen_t len = sizeof value;
  getsockopt(fd, level, name, &value, &len);
  return value;
}

class SocketEvents : public ::testing::Test {
 protected:
  void use_policy(const char* toml) {
    auto loaded = config::load_policy_text(toml, "test.toml");
    ASSERT_TRUE(loaded.ok()) << loaded.error().to_string();
    policy_ = std::make_unique<config::Policy>(loaded.policy());
    install_runtime_for_testing(policy_.get(), "unit_test");
  }

  // socket() + connect() as the hooks would report them; returns the client fd.
  int connect_client() {
    listener_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    EXPECT_EQ(::bind(listener_, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    EXPECT_EQ(::listen(listener_, 4), 0);
    ::getsockname(listener_, reinterpret_cast<sockaddr*>(&addr), &len);
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    on_socket_created(fd, AF_INET, SOCK_STREAM, 0);
    before_connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
    EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    after_connect(fd, 0);
    return fd;
  }

  void TearDown() override {
    for (int fd : {listener_}) {
      if (fd >= 0) {
        before_close(fd);
        ::close(fd);
      }
    }
    install_runtime_for_testing(nullptr, "unit_test");
  }

  std::unique_ptr<config::Policy> policy_;
  int listener_ = -1;
};

TEST_F(SocketEvents, ClientGetsNodelayBeforeConnect) {
  use_policy("[defaults]\nnodelay = \"on\"\n");
  const int fd = connect_client();
  EXPECT_EQ(int_option(fd, IPPROTO_TCP, TCP_NODELAY), 1);
  EXPECT_EQ(fd_table().find(fd)->role.load(), SocketRole::client);
  EXPECT_EQ(fd_table().find(fd)->rule_index.load(), kRuleDefaults);
  before_close(fd);
  ::close(fd);
}

TEST_F(SocketEvents, UntunedRuntimeTouchesNothing) {
  install_runtime_for_testing(nullptr, "unit_test");
  const int fd = connect_client();
  EXPECT_EQ(int_option(fd, IPPROTO_TCP, TCP_NODELAY), 0);
  ::close(fd);
}

TEST_F(SocketEvents, ForcedNodelayVetoesTheApp) {
  use_policy("[defaults]\nnodelay = \"force\"\n");
  const int fd = connect_client();
  const int zero = 0;
  const int one = 1;
  EXPECT_EQ(on_app_setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &zero, sizeof zero), SockoptVerdict::swallow);
  EXPECT_EQ(on_app_setsockopt(fd, IPPROTO_TCP, TCP_CORK, &one, sizeof one), SockoptVerdict::swallow);
  EXPECT_EQ(on_app_setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one), SockoptVerdict::pass);
  EXPECT_EQ(on_app_setsockopt(fd, IPPROTO_TCP, TCP_CORK, &zero, sizeof zero), SockoptVerdict::pass);
  before_close(fd);
  ::close(fd);
}

// Under a policy where some rule sizes buffers (a rule the socket may still match).
TEST_F(SocketEvents, AppBufferHeldUntilConnectThenApplied) {
  use_policy(
      "[defaults]\nnodelay = \"on\"\n[[rule]]\nname = \"far\"\nmatch = { port = 1 }\nbuffers = { rcvbuf = "
      "\"256KiB\" }\n");
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  on_socket_created(fd, AF_INET, SOCK_STREAM, 0);
  const int small = 20000;  // pinned it would read 40000; the default is larger
  EXPECT_EQ(on_app_setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof small), SockoptVerdict::swallow);
  int reported = 0;
  socklen_t len = sizeof reported;
  EXPECT_TRUE(answer_app_getsockopt(fd, SOL_SOCKET, SO_RCVBUF, &reported, &len));
  EXPECT_EQ(reported, 2 * small);                               // what the kernel would have said
  EXPECT_NE(int_option(fd, SOL_SOCKET, SO_RCVBUF), 2 * small);  // not pinned yet
  before_close(fd);
  ::close(fd);
}

// Under a policy where no rule sizes buffers, holding them back changes nothing for the better:
// the app's call goes to the kernel, which answers getsockopt itself.
TEST_F(SocketEvents, AppBufferPassesWhereNoRuleSizesBuffers) {
  use_policy("[defaults]\nnodelay = \"keep\"\n");
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  on_socket_created(fd, AF_INET, SOCK_STREAM, 0);
  const int small = 20000;
  EXPECT_EQ(on_app_setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof small), SockoptVerdict::pass);
  int reported = 0;
  socklen_t len = sizeof reported;
  EXPECT_FALSE(answer_app_getsockopt(fd, SOL_SOCKET, SO_RCVBUF, &reported, &len)) << "nothing held to answer for";
  before_close(fd);
  ::close(fd);
}

TEST_F(SocketEvents, NonTcpSocketsAreOther) {
  use_policy("[defaults]\nnodelay = \"on\"\n");
  const int udp = ::socket(AF_INET, SOCK_DGRAM, 0);
  on_socket_created(udp, AF_INET, SOCK_DGRAM, 0);
  EXPECT_EQ(fd_table().find(udp)->kind.load(), FdKind::other);
  EXPECT_EQ(tcp_slot_for_io(udp), nullptr);
  const int unix_stream = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  on_socket_created(unix_stream, AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  EXPECT_EQ(tcp_slot_for_io(unix_stream), nullptr);
  const int tcp = ::socket(AF_INET6, SOCK_STREAM | SOCK_NONBLOCK, IPPROTO_TCP);
  on_socket_created(tcp, AF_INET6, SOCK_STREAM | SOCK_NONBLOCK, IPPROTO_TCP);
  EXPECT_NE(tcp_slot_for_io(tcp), nullptr);
  for (int fd : {udp, unix_stream, tcp}) {
    before_close(fd);
    ::close(fd);
  }
}

TEST_F(SocketEvents, UnknownFdsAreClassifiedOnFirstIo) {
  use_policy("[defaults]\nnodelay = \"on\"\n");
  int pipe_fds[2];
  ASSERT_EQ(::pipe(pipe_fds), 0);
  fd_table().retire(pipe_fds[1]);
  EXPECT_EQ(tcp_slot_for_io(pipe_fds[1]), nullptr);
  EXPECT_EQ(fd_table().find(pipe_fds[1])->kind.load(), FdKind::other);
  const int tcp = ::socket(AF_INET, SOCK_STREAM, 0);  // not reported: as if made by a raw syscall
  fd_table().retire(tcp);
  EXPECT_NE(tcp_slot_for_io(tcp), nullptr);
  for (int fd : {pipe_fds[0], pipe_fds[1], tcp}) {
    before_close(fd);
    ::close(fd);
  }
}

TEST_F(SocketEvents, ErrnoIsPreserved) {
  use_policy("[defaults]\nnodelay = \"force\"\nkeepalive = { idle = \"10s\" }\n");
  errno = 4242;
  const int fd = connect_client();
  EXPECT_EQ(errno, 4242);
  const int zero = 0;
  errno = 4343;
  (void)on_app_setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &zero, sizeof zero);
  EXPECT_EQ(errno, 4343);
  before_close(fd);
  ::close(fd);
}

}  // namespace
}  // namespace tcptune::shim
