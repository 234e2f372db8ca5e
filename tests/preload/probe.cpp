// A small program that knows nothing of tcptune: each subcommand opens loopback connections
// the way an app would and checks, from inside (getsockopt), what the kernel reports. Run it
// with and without LD_PRELOAD=libtcptune.so; the expectations are given on the command line
// so the same code proves both the tuned and the untuned value.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <string>
#include <thread>
#include <vector>

namespace {

int g_failures = 0;

void check(bool ok, const std::string& what) {
  std::printf("%s %s\n", ok ? "ok  " : "FAIL", what.c_str());
  if (!ok) {
    ++g_failures;
  }
}

int int_option(int fd, int level, int name) {
  int value = -1;
  socklen_t len = sizeof value;
  if (getsockopt(fd, level, name, &value, &len) != 0) {
    return -1000 - errno;
  }
  return value;
}

std::string congestion(int fd) {
  char name[32] = {};
  socklen_t len = sizeof name - 1;
  getsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, name, &len);
  return name;
}

struct Pair {
  int listener = -1;
  int client = -1;
  int server = -1;
};

sockaddr_storage loopback(int family, const char* text, int port, socklen_t& len) {
  sockaddr_storage storage{};
  if (family == AF_INET) {
    auto* in = reinterpret_cast<sockaddr_in*>(&storage);
    in->sin_family = AF_INET;
    in->sin_port = htons(static_cast<uint16_t>(port));
    inet_pton(AF_INET, text, &in->sin_addr);
    len = sizeof *in;
  } else {
    auto* in6 = reinterpret_cast<sockaddr_in6*>(&storage);
    in6->sin6_family = AF_INET6;
    in6->sin6_port = htons(static_cast<uint16_t>(port));
    inet_pton(AF_INET6, text, &in6->sin6_addr);
    len = sizeof *in6;
  }
  return storage;
}

int listen_on(int family, const char* address, int port = 0) {
  const int fd = socket(family, SOCK_STREAM, 0);
  const int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  socklen_t len = 0;
  sockaddr_storage addr = loopback(family, address, port, len);
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), len) != 0 || listen(fd, 16) != 0) {
    std::perror("bind/listen");
    std::exit(2);
  }
  return fd;
}

int port_of(int fd) {
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  return ntohs(addr.ss_family == AF_INET ? reinterpret_cast<sockaddr_in*>(&addr)->sin_port
                                         : reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port);
}

int connect_to(int fd, int family, const char* address, int port) {
  socklen_t len = 0;
  sockaddr_storage addr = loopback(family, address, port, len);
  return connect(fd, reinterpret_cast<sockaddr*>(&addr), len);
}

// A listener on `listen_address`, a client connected to it from a fresh socket, the accepted end.
Pair make_pair(int family = AF_INET, const char* listen_address = "127.0.0.1", const char* connect_address = nullptr,
               const std::function<void(int)>& before_connect = {}) {
  Pair pair;
  pair.listener = listen_on(family, listen_address);
  pair.client = socket(family, SOCK_STREAM, 0);
  if (before_connect) {
    before_connect(pair.client);
  }
  if (connect_to(pair.client, family, connect_address != nullptr ? connect_address : listen_address,
                 port_of(pair.listener)) != 0) {
    std::perror("connect");
    std::exit(2);
  }
  pair.server = accept(pair.listener, nullptr, nullptr);
  return pair;
}

void close_pair(const Pair& pair) {
  close(pair.client);
  close(pair.server);
  close(pair.listener);
}

using Args = std::map<std::string, std::string>;
int arg_int(const Args& args, const std::string& key, int fallback) {
  const auto found = args.find(key);
  return found == args.end() ? fallback : std::atoi(found->second.c_str());
}
std::string arg_str(const Args& args, const std::string& key, const std::string& fallback = "") {
  const auto found = args.find(key);
  return found == args.end() ? fallback : found->second;
}

// nodelay --client N --server N [--family 6] [--address A] [--connect A]
void cmd_nodelay(const Args& args) {
  const int family = arg_int(args, "family", 4) == 6 ? AF_INET6 : AF_INET;
  const std::string address = arg_str(args, "address", family == AF_INET ? "127.0.0.1" : "::1");
  const std::string target = arg_str(args, "connect", address);
  const Pair pair = make_pair(family, address.c_str(), target.c_str());
  check(int_option(pair.client, IPPROTO_TCP, TCP_NODELAY) == arg_int(args, "client", -1),
        "client TCP_NODELAY == " + arg_str(args, "client"));
  check(int_option(pair.server, IPPROTO_TCP, TCP_NODELAY) == arg_int(args, "server", -1),
        "accepted TCP_NODELAY == " + arg_str(args, "server"));
  close_pair(pair);
}

// force: the app turns Nagle back on and corks; under nodelay = "force" both are no-ops.
void cmd_force(const Args& args) {
  const Pair pair = make_pair();
  const int zero = 0;
  const int one = 1;
  check(setsockopt(pair.client, IPPROTO_TCP, TCP_NODELAY, &zero, sizeof zero) == 0,
        "setsockopt(TCP_NODELAY=0) succeeds");
  check(setsockopt(pair.client, IPPROTO_TCP, TCP_CORK, &one, sizeof one) == 0, "setsockopt(TCP_CORK=1) succeeds");
  check(int_option(pair.client, IPPROTO_TCP, TCP_NODELAY) == arg_int(args, "nodelay", -1),
        "TCP_NODELAY after the app cleared it == " + arg_str(args, "nodelay"));
  check(int_option(pair.client, IPPROTO_TCP, TCP_CORK) == arg_int(args, "cork", -1),
        "TCP_CORK after the app set it == " + arg_str(args, "cork"));
  close_pair(pair);
}

// buffers --app-rcvbuf N --before N --after N: the app pins SO_RCVBUF before connect.
void cmd_buffers(const Args& args) {
  const int app_value = arg_int(args, "app-rcvbuf", 65536);
  int before = -1;
  const Pair pair = make_pair(AF_INET, "127.0.0.1", nullptr, [&](int fd) {
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &app_value, sizeof app_value);
    before = int_option(fd, SOL_SOCKET, SO_RCVBUF);
  });
  check(before == arg_int(args, "before", -1),
        "SO_RCVBUF seen by the app before connect (" + std::to_string(before) + ") == " + arg_str(args, "before"));
  const int after = int_option(pair.client, SOL_SOCKET, SO_RCVBUF);
  const std::string expected = arg_str(args, "after");
  if (expected == "unlocked") {
    check(after != 2 * app_value, "SO_RCVBUF after connect (" + std::to_string(after) + ") is not the app's pin");
  } else {
    check(after == std::atoi(expected.c_str()),
          "SO_RCVBUF after connect (" + std::to_string(after) + ") == " + expected);
  }
  close_pair(pair);
}

// wscale --max N | --min N: the client's receive window scale, chosen at the SYN.
void cmd_wscale(const Args& args) {
  const Pair pair = make_pair();
  tcp_info info{};
  socklen_t len = sizeof info;
  getsockopt(pair.client, IPPROTO_TCP, TCP_INFO, &info, &len);
  const int wscale = info.tcpi_rcv_wscale;
  if (args.count("max") != 0) {
    check(wscale <= arg_int(args, "max", 0),
          "client rcv_wscale " + std::to_string(wscale) + " <= " + arg_str(args, "max"));
  }
  if (args.count("min") != 0) {
    check(wscale >= arg_int(args, "min", 99),
          "client rcv_wscale " + std::to_string(wscale) + " >= " + arg_str(args, "min"));
  }
  close_pair(pair);
}

void cmd_congestion(const Args& args) {
  const Pair pair = make_pair();
  check(congestion(pair.client) == arg_str(args, "client"),
        "client congestion " + congestion(pair.client) + " == " + arg_str(args, "client"));
  close_pair(pair);
}

void cmd_keepalive(const Args& args) {
  const Pair pair = make_pair();
  check(int_option(pair.client, SOL_SOCKET, SO_KEEPALIVE) == arg_int(args, "on", -1),
        "SO_KEEPALIVE == " + arg_str(args, "on"));
  if (args.count("idle") != 0) {
    check(int_option(pair.client, IPPROTO_TCP, TCP_KEEPIDLE) == arg_int(args, "idle", -1),
          "TCP_KEEPIDLE == " + arg_str(args, "idle"));
    check(int_option(pair.client, IPPROTO_TCP, TCP_KEEPINTVL) == arg_int(args, "interval", -1),
          "TCP_KEEPINTVL == " + arg_str(args, "interval"));
    check(int_option(pair.client, IPPROTO_TCP, TCP_KEEPCNT) == arg_int(args, "count", -1),
          "TCP_KEEPCNT == " + arg_str(args, "count"));
  }
  close_pair(pair);
}

// Non-blocking connect: EINPROGRESS reaches the app unchanged and the option is already set.
void cmd_nonblocking(const Args& args) {
  const int listener = listen_on(AF_INET, "127.0.0.1");
  const int client = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  errno = 0;
  const int result = connect_to(client, AF_INET, "127.0.0.1", port_of(listener));
  const int saved = errno;
  check(result == 0 || (result == -1 && saved == EINPROGRESS), "non-blocking connect returns 0 or EINPROGRESS");
  check(int_option(client, IPPROTO_TCP, TCP_NODELAY) == arg_int(args, "client", -1),
        "TCP_NODELAY == " + arg_str(args, "client"));
  check((fcntl(client, F_GETFL) & O_NONBLOCK) != 0, "socket still non-blocking");
  const int server = accept4(listener, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
  check(server >= 0, "accept4 succeeds");
  check((fcntl(server, F_GETFL) & O_NONBLOCK) != 0, "accept4 SOCK_NONBLOCK honoured");
  check((fcntl(server, F_GETFD) & FD_CLOEXEC) != 0, "accept4 SOCK_CLOEXEC honoured");
  check(int_option(server, IPPROTO_TCP, TCP_NODELAY) == arg_int(args, "server", -1),
        "accepted TCP_NODELAY == " + arg_str(args, "server"));
  char byte = 0;
  errno = 0;
  check(recv(server, &byte, 1, 0) == -1 && errno == EAGAIN, "recv with no data: EAGAIN");
  close(client);
  close(server);
  close(listener);
}

// Failing calls leave exactly the errno the kernel gave.
void cmd_errno(const Args& /*args*/) {
  const int listener = listen_on(AF_INET, "127.0.0.1");
  const int port = port_of(listener);
  close(listener);  // nothing listens there now
  const int client = socket(AF_INET, SOCK_STREAM, 0);
  errno = 0;
  check(connect_to(client, AF_INET, "127.0.0.1", port) == -1 && errno == ECONNREFUSED, "connect: ECONNREFUSED");
  close(client);
  const char data[4] = {'a', 'b', 'c', 'd'};
  errno = 0;
  check(write(987654, data, sizeof data) == -1 && errno == EBADF, "write to a bad fd: EBADF");
  errno = 0;
  check(send(987654, data, sizeof data, 0) == -1 && errno == EBADF, "send to a bad fd: EBADF");
  const int one = 1;
  errno = 0;
  check(setsockopt(987654, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) == -1 && errno == EBADF, "setsockopt: EBADF");
  errno = 0;
  check(close(987654) == -1 && errno == EBADF, "close: EBADF");
  errno = 12345;
  const int fine = socket(AF_INET, SOCK_STREAM, 0);
  check(fine >= 0 && errno == 12345, "successful socket() leaves errno alone");
  errno = 12345;
  const Pair pair = make_pair();
  check(errno == 12345, "successful connect/accept leave errno alone");
  errno = 12345;
  check(write(pair.client, data, sizeof data) == 4 && errno == 12345, "successful write leaves errno alone");
  close(fine);
  close_pair(pair);
}

// A reused fd number never inherits the old socket's state.
void cmd_fd_reuse(const Args& /*args*/) {
  const int first = socket(AF_INET, SOCK_STREAM, 0);
  const int small = 4096;
  setsockopt(first, SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
  close(first);
  const int second = socket(AF_INET, SOCK_STREAM, 0);
  check(second == first, "the fd number is reused");
  const int fresh = socket(AF_INET, SOCK_STREAM, 0);
  const int expected = int_option(fresh, SOL_SOCKET, SO_RCVBUF);
  check(int_option(second, SOL_SOCKET, SO_RCVBUF) == expected,
        "reused number's SO_RCVBUF (" + std::to_string(int_option(second, SOL_SOCKET, SO_RCVBUF)) +
            ") == a fresh socket's (" + std::to_string(expected) + ")");
  close(fresh);
  close(second);
  // A force-tuned connection's number reused by a pipe: writes to it are plain writes.
  const Pair pair = make_pair();
  const int number = pair.client;
  int pipe_fds[2];
  if (pipe(pipe_fds) != 0) {
    std::exit(2);
  }
  const int moved = dup2(pipe_fds[1], number);
  check(moved == number && write(number, "xy", 2) == 2, "dup2 replaces the socket with a pipe; writes to it work");
  char buffer[2];
  check(read(pipe_fds[0], buffer, 2) == 2 && buffer[0] == 'x', "pipe carries the bytes");
  close(number);
  close(pipe_fds[0]);
  close(pipe_fds[1]);
  close(pair.server);
  close(pair.listener);
}

// A dup of a forced connection is forced too.
void cmd_dup(const Args& args) {
  const Pair pair = make_pair();
  const int copy = dup(pair.client);
  const int copy2 = fcntl(pair.client, F_DUPFD_CLOEXEC, 100);
  const int zero = 0;
  setsockopt(copy, IPPROTO_TCP, TCP_NODELAY, &zero, sizeof zero);
  check(int_option(pair.client, IPPROTO_TCP, TCP_NODELAY) == arg_int(args, "nodelay", -1),
        "after TCP_NODELAY=0 on a dup(): " + arg_str(args, "nodelay"));
  setsockopt(copy2, IPPROTO_TCP, TCP_NODELAY, &zero, sizeof zero);
  check(int_option(pair.client, IPPROTO_TCP, TCP_NODELAY) == arg_int(args, "nodelay", -1),
        "after TCP_NODELAY=0 on an F_DUPFD_CLOEXEC copy: " + arg_str(args, "nodelay"));
  close(copy);
  close(copy2);
  close_pair(pair);
}

// A socket made with raw system calls is classified on first use of a hooked call.
void cmd_raw_syscall(const Args& args) {
  const int listener = listen_on(AF_INET, "127.0.0.1");
  const int client = static_cast<int>(syscall(SYS_socket, AF_INET, SOCK_STREAM, 0));
  socklen_t len = 0;
  sockaddr_storage addr = loopback(AF_INET, "127.0.0.1", port_of(listener), len);
  if (syscall(SYS_connect, client, &addr, len) != 0) {
    std::exit(2);
  }
  const int one = 1;
  setsockopt(client, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one);  // any hooked call will do
  check(int_option(client, IPPROTO_TCP, TCP_NODELAY) == arg_int(args, "nodelay", -1),
        "raw-syscall socket TCP_NODELAY == " + arg_str(args, "nodelay"));
  close(client);
  close(listener);
}

// Parent without the shim creates a connected pair and a listener, then execs itself with
// the shim preloaded: the inherited listener is tuned (its accepted sockets get TCP_NODELAY
// `--nodelay`), the inherited connected socket is left as it was (`--connected-nodelay`): its
// other owner may be mid-message.
void cmd_inherit(const Args& args) {
  const char* shim = std::getenv("PROBE_SHIM");
  if (shim == nullptr) {
    std::exit(2);
  }
  const Pair pair = make_pair();
  const int listener = listen_on(AF_INET, "127.0.0.1");
  const int late_client = socket(AF_INET, SOCK_STREAM, 0);
  connect_to(late_client, AF_INET, "127.0.0.1", port_of(listener));
  setenv("LD_PRELOAD", shim, 1);
  const std::string self = "/proc/self/exe";
  const std::string connected = std::to_string(pair.client);
  const std::string listening = std::to_string(listener);
  const std::string expect = arg_str(args, "nodelay");
  const std::string expect_connected = arg_str(args, "connected-nodelay");
  execl(self.c_str(), "probe", "inherit-child", "--connected", connected.c_str(), "--listener", listening.c_str(),
        "--nodelay", expect.c_str(), "--connected-nodelay", expect_connected.c_str(), nullptr);
  std::perror("execl");
  std::exit(2);
}

void cmd_inherit_child(const Args& args) {
  const int connected = arg_int(args, "connected", -1);
  const int listener = arg_int(args, "listener", -1);
  check(int_option(connected, IPPROTO_TCP, TCP_NODELAY) == arg_int(args, "connected-nodelay", -1),
        "inherited connected socket TCP_NODELAY == " + arg_str(args, "connected-nodelay"));
  const int accepted = accept(listener, nullptr, nullptr);
  check(accepted >= 0 && int_option(accepted, IPPROTO_TCP, TCP_NODELAY) == arg_int(args, "nodelay", -1),
        "accepted from an inherited listener TCP_NODELAY == " + arg_str(args, "nodelay"));
}

// A daemon-style program closes every descriptor above stderr and dup2()s over high numbers,
// then opens sockets and writes: nothing it writes may land in the shim's log, and the log
// keeps working.
void cmd_close_everything(const Args& /*args*/) {
  closefrom(3);
  const int everything_high = 2000;
  close_range(3, static_cast<unsigned int>(everything_high), 0);
  for (int fd = 3; fd < 1100; ++fd) {
    close(fd);
  }
  int pipe_fds[2];
  check(pipe(pipe_fds) == 0, "pipe after closing everything");
  for (int fd = 900; fd < 1000; ++fd) {
    dup2(pipe_fds[1], fd);  // over wherever the shim's log may live
  }
  for (int fd = 900; fd < 1000; ++fd) {
    close(fd);
  }
  const Pair pair = make_pair();
  const char message[] = "app data";
  check(write(pair.client, message, sizeof message) == static_cast<ssize_t>(sizeof message), "app write works");
  char buffer[sizeof message] = {};
  check(read(pair.server, buffer, sizeof buffer) == static_cast<ssize_t>(sizeof message) &&
            std::memcmp(buffer, message, sizeof message) == 0,
        "app data arrives intact");
  close(pipe_fds[0]);
  close(pipe_fds[1]);
  close_pair(pair);
}

// writes --count N --size S [--keep-open 1] [--exit-from-thread 1]: N write()s, one writev()
// and one send() of S bytes each on a loopback connection, then close; with keep-open, a
// second connection with 3 writes is still open at exit; exit() may come from another thread.
void cmd_writes(const Args& args) {
  const int count = arg_int(args, "count", 100);
  const auto size = static_cast<std::size_t>(arg_int(args, "size", 100));
  const std::vector<char> data(size, 'w');
  auto drain = [](int fd) {
    char buffer[65536];
    while (read(fd, buffer, sizeof buffer) > 0) {
    }
  };
  const Pair pair = make_pair();
  std::thread reader(drain, pair.server);
  for (int i = 0; i < count; ++i) {
    check(write(pair.client, data.data(), size) == static_cast<ssize_t>(size), "write");
  }
  const iovec halves[2] = {{const_cast<char*>(data.data()), size / 2},
                           {const_cast<char*>(data.data()) + size / 2, size - size / 2}};
  check(writev(pair.client, halves, 2) == static_cast<ssize_t>(size), "writev");
  check(send(pair.client, data.data(), size, 0) == static_cast<ssize_t>(size), "send");
  shutdown(pair.client, SHUT_WR);
  reader.join();
  close_pair(pair);
  if (arg_int(args, "keep-open", 0) == 1) {
    static Pair kept = make_pair();
    static std::thread kept_reader(drain, kept.server);
    kept_reader.detach();
    for (int i = 0; i < 3; ++i) {
      check(write(kept.client, data.data(), size) == static_cast<ssize_t>(size), "write on the kept connection");
    }
  }
  if (arg_int(args, "print-maps", 0) == 1) {
    // Whether libunwind is mapped into this process (the shim loads it only for call sites).
    FILE* maps = std::fopen("/proc/self/maps", "r");
    char line[512];
    int unwind = 0;
    while (maps != nullptr && std::fgets(line, sizeof line, maps) != nullptr) {
      unwind += std::strstr(line, "libunwind") != nullptr ? 1 : 0;
    }
    if (maps != nullptr) {
      std::fclose(maps);
    }
    std::printf("libunwind mappings: %d\n", unwind);
  }
  if (arg_int(args, "exit-from-thread", 0) == 1) {
    std::printf("%d failed\n", g_failures);
    std::fflush(stdout);
    std::thread([] { std::exit(g_failures == 0 ? 0 : 1); }).join();
  }
}

// Runs main and prints a marker: for fail-open and strict-mode tests.
void cmd_main_ran(const Args& args) {
  std::printf("main ran\n");
  cmd_nodelay(args);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: probe COMMAND [--key value]...\n");
    return 2;
  }
  Args args;
  for (int i = 2; i + 1 < argc; i += 2) {
    std::string key = argv[i];
    if (key.rfind("--", 0) == 0) {
      key = key.substr(2);
    }
    args[key] = argv[i + 1];
  }
  const std::map<std::string, void (*)(const Args&)> commands = {
      {"nodelay", cmd_nodelay},
      {"force", cmd_force},
      {"buffers", cmd_buffers},
      {"wscale", cmd_wscale},
      {"congestion", cmd_congestion},
      {"keepalive", cmd_keepalive},
      {"nonblocking", cmd_nonblocking},
      {"errno", cmd_errno},
      {"fd-reuse", cmd_fd_reuse},
      {"dup", cmd_dup},
      {"raw-syscall", cmd_raw_syscall},
      {"inherit", cmd_inherit},
      {"inherit-child", cmd_inherit_child},
      {"close-everything", cmd_close_everything},
      {"main-ran", cmd_main_ran},
      {"writes", cmd_writes},
  };
  const auto found = commands.find(argv[1]);
  if (found == commands.end()) {
    std::fprintf(stderr, "probe: unknown command %s\n", argv[1]);
    return 2;
  }
  found->second(args);
  std::printf("%d failed\n", g_failures);
  return g_failures == 0 ? 0 : 1;
}
